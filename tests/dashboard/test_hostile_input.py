"""Bad and hostile input on every dashboard route, on both stores: an error page with a
4xx status, never a 5xx, and nothing written."""

from __future__ import annotations

from playwright.sync_api import expect

from corral.model.tasks import NewTask
from corral.usecases.tasks import enqueue

BAD_GETS = [
    ("/tasks?status=sleeping", 422),
    ("/tasks?sort=sideways", 422),
    ("/tasks?limit=7", 422),
    ("/tasks?after=x.y", 422),
    ("/tasks?label=novalue", 422),
    ("/tasks?queue=a%20b", 422),
    ("/tasks?q=" + "x" * 300, 422),
    ("/tasks?q=%00", 422),
    ("/tasks?label=k%3D%00", 422),
    ("/tasks?q=%25_%5C", 200),  # searched for as it is
    ("/tasks/t-%00", 404),
    ("/tasks/t-" + "x" * 500, 404),
    ("/tasks/t-nosuchtask0", 404),
    ("/events?type=task.exploded", 422),
    ("/events?since=soon", 422),
]
BAD_POSTS = [
    ("/tasks/t-%00/retry", {}, 404),
    ("/tasks/t-nosuchtask0/cancel", {}, 404),
    ("/tasks/bulk", {"action": "explode", "id": "t-x"}, 422),
    ("/tasks/bulk", {"action": "priority", "priority": "high", "id": "t-x"}, 422),
    ("/workers/w-%00/drain", {}, 404),
    ("/queues/a%00/limits", {"rate": "1"}, 404),
    ("/queues/code/limits", {"rate": "-1"}, 422),
    ("/providers/p%00/pause", {}, 404),
    ("/schedules/s%00/pause", {}, 404),
    ("/schedules/nosuch/trigger", {}, 404),
    ("/providers/p1/cap", {"max_running": "many"}, 422),
    ("/tasks/{task}/cancel", {"note": "a\x00b"}, 422),
]


def test_bad_input_is_a_4xx_page_and_writes_nothing(served, open_page):
    """Each bad GET and POST answers its 4xx as a page; the task stays as it was."""
    served.start()
    with served.store() as store:
        task = enqueue(store, NewTask(title="untouched", queue="code"))
    page = open_page(served.url + "/tasks")
    expect(page.get_by_role("link", name="untouched")).to_be_visible()
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    for path, status in BAD_GETS:
        answer = page.request.get(served.url + path)
        assert status == answer.status, path
        assert answer.headers["content-type"].startswith("text/html"), path
    for path, fields, status in BAD_POSTS:
        answer = page.request.post(
            served.url + path.format(task=task.id),
            form={"csrf": token, **fields},
            headers={"Origin": served.url},
        )
        assert status == answer.status, path
    with served.store() as store:
        assert task == store.tasks.get_task(task.id)
