"""The tasks page in a real browser: filters, search, retry, bulk cancel by filter, live rows,
escaping, and a viewer's page without write controls whose forged writes are refused."""

from __future__ import annotations

import urllib.error
import urllib.parse
import urllib.request

from playwright.sync_api import expect
from tests.dashboard.conftest import failed_task, shoot

from corral.model.events import EventFilter
from corral.model.states import TaskStatus
from corral.model.tasks import NewTask
from corral.model.workers import NewWorker
from corral.usecases import queues, usage, workers
from corral.usecases.claims import claim, complete
from corral.usecases.tasks import enqueue


def test_loopback_without_tokens_opens_the_overview_with_its_headers(server, open_page):
    """With no token, the loopback sees the overview (light and dark), served with a CSP
    and no inline script."""
    server.start()
    with server.store() as store:
        _some_work(store)
    page = open_page(server.url + "/")
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(page.get_by_role("link", name="code")).to_be_visible()
    expect(page.locator("svg.chart rect.finished")).not_to_have_count(0)
    expect(page.get_by_text("Repairs in the last hour: none.")).to_be_visible()
    answer = page.request.get(server.url + "/tasks")
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    assert "unsafe-inline" not in answer.headers["content-security-policy"]
    assert "<script>" not in answer.text()
    shoot(page, "overview")
    shoot(open_page(server.url + "/", scheme="dark"), "overview-dark")


def _some_work(store) -> None:
    """Tasks in three queues, some done, one failed, one running: an overview to look at."""
    worker = workers.register(store, NewWorker(name="agent-1")).worker
    for i in range(9):
        task = enqueue(store, NewTask(title=f"task {i}", queue=("code", "docs", "tests")[i % 3]))
        if i < 5:
            held = claim(store, task.id, worker.id)
            complete(store, task.id, token=held.token)
    claim(store, enqueue(store, NewTask(title="refactor the parser", queue="code")).id, worker.id)
    failed_task(store, "flaky integration test")


def test_a_script_title_renders_as_text(server, open_page):
    """A task titled <script>alert(1)</script> shows its title as text, and runs nothing."""
    server.start()
    with server.store() as store:
        enqueue(store, NewTask(title="<script>alert(1)</script>", payload={"x": "<img src=x>"}))
    page = open_page(server.url + "/tasks")
    expect(page.get_by_role("link", name="<script>alert(1)</script>")).to_be_visible()
    assert 0 == page.locator("main script, main img").count()


def test_filter_search_and_retry_a_failed_task(server, open_page):
    """Filtering by status and searching the payload find the task; Retry makes it ready."""
    server.start()
    with server.store() as store:
        enqueue(store, NewTask(title="other", payload={"ticket": "XY-1"}))
        broken = failed_task(store, "flaky build")
        store.tasks.get_task(broken)
    page = open_page(server.url + "/tasks")
    page.get_by_label("Status").select_option("failed")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_role("link", name="flaky build")).to_be_visible()
    expect(page.get_by_role("link", name="other")).to_have_count(0)
    shoot(page, "tasks")
    page.get_by_label("Select flaky build").check()
    page.get_by_role("button", name="Retry").click()
    expect(page.get_by_role("status")).to_contain_text("Retried 1 task")
    with server.store() as store:
        assert TaskStatus.READY == store.tasks.get_task(broken).status
    page.goto(server.url + "/tasks?q=xy-1")
    expect(page.get_by_role("link", name="other")).to_be_visible()
    expect(page.get_by_role("link", name="flaky build")).to_have_count(0)


def test_cancel_everything_a_filter_matches_after_a_confirmation(server, open_page):
    """Cancel on every task of a queue shows the count, then cancels those and no other."""
    server.start()
    with server.store() as store:
        doomed = [enqueue(store, NewTask(title=f"old {i}", queue="old")).id for i in range(60)]
        kept = enqueue(store, NewTask(title="keep me", queue="new")).id
    page = open_page(server.url + "/tasks?queue=old&limit=25")
    page.get_by_label("Act on", exact=True).select_option("matching")
    page.get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("heading", name="Cancel 60 tasks?")).to_be_visible()
    page.get_by_role("button", name="Yes, cancel 60").click()
    expect(page.get_by_role("status")).to_contain_text("Cancelled 60 tasks")
    with server.store() as store:
        assert {TaskStatus.CANCELLED} == {store.tasks.get_task(t).status for t in doomed}
        assert TaskStatus.READY == store.tasks.get_task(kept).status


def test_pages_follow_the_cursor(server, open_page):
    """Next page goes on after the last row shown, and the pages hold every task once."""
    server.start()
    with server.store() as store:
        for i in range(30):
            enqueue(store, NewTask(title=f"task {i:02}"))
    page = open_page(server.url + "/tasks?limit=25&sort=oldest")
    first = page.locator("tbody a").all_inner_texts()
    page.get_by_role("link", name="Next page").click()
    expect(page.get_by_role("link", name="First page")).to_be_visible()
    second = page.locator("tbody a").all_inner_texts()
    assert [f"task {i:02}" for i in range(30)] == first + second


def test_a_new_task_appears_live(server, open_page):
    """A task added while the page is open shows up without a reload."""
    server.start()
    page = open_page(server.url + "/tasks")
    expect(page.get_by_text("No task matches.")).to_be_visible()
    page.wait_for_function("() => window.htmx !== undefined")
    page.wait_for_timeout(300)  # the event stream connects
    assert 0 == server.corral("add", "arrived live").returncode
    expect(page.get_by_role("link", name="arrived live")).to_be_visible()


def test_a_viewer_sees_no_write_controls_and_forged_writes_are_refused(server, open_page):
    """A viewer signs in and sees no write control on any page; its POST is 403 even with
    the page's CSRF token. An operator's POST without the token, without an Origin, or
    from another site is 403 too, and the same POST from the page goes through."""
    viewer, operator = server.token("viewer"), server.token("operator")
    server.start()
    with server.store() as store:
        broken = failed_task(store, "broken")
        usage.set_provider(store, "claude-work", max_running=1)
        queues.set_queue_limits(store, "default", {"max_running": 2})
        workers.register(store, NewWorker(name="busy-bee"))
    page = open_page(server.url + "/tasks")
    expect(page.get_by_role("heading", name="Sign in to corral")).to_be_visible()
    page.get_by_label("API token").fill(viewer)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("link", name="broken")).to_be_visible()
    assert 0 == page.get_by_role("checkbox").count()
    for path in ("/tasks", f"/tasks/{broken}", "/workers", "/queues", "/schedules", "/events", "/"):
        page.goto(server.url + path)
        shown = page.get_by_role("button").all_inner_texts()
        assert [] == [b for b in shown if b not in ("Sign out", "Filter")], path
    page.goto(server.url + "/tasks")
    token = page.locator("input[name=csrf]").first.get_attribute("value")
    form = {"csrf": token, "action": "retry", "id": broken}
    same_site = {"Origin": server.url}
    assert 403 == page.request.post(server.url + "/tasks/bulk", form=form, headers=same_site).status
    operator_page = open_page(server.url + "/login")
    operator_page.get_by_label("API token").fill(operator)
    operator_page.get_by_role("button", name="Sign in").click()
    expect(operator_page.get_by_role("heading", name="Overview")).to_be_visible()
    post = operator_page.request.post
    no_token = {"action": "retry", "id": broken}
    assert 403 == post(server.url + "/tasks/bulk", form=no_token, headers=same_site).status
    token = operator_page.locator("input[name=csrf]").first.get_attribute("value")
    form = {"csrf": token, "action": "retry", "id": broken}
    assert 403 == post(server.url + "/tasks/bulk", form=form, max_redirects=0).status  # no Origin
    cookies = {c["name"]: c["value"] for c in operator_page.context.cookies()}
    assert 403 == _cross_site_post(server.url, cookies["corral_session"])
    with server.store() as store:
        assert TaskStatus.FAILED == store.tasks.get_task(broken).status
    done = post(server.url + "/tasks/bulk", form=form, headers=same_site, max_redirects=0)
    assert 303 == done.status  # the same write, from the page: the refusals were the checks'
    with server.store() as store:
        assert TaskStatus.READY == store.tasks.get_task(broken).status


def _cross_site_post(url: str, session: str) -> int:
    """The status of a POST that carries the session cookie but comes from elsewhere."""
    body = urllib.parse.urlencode({"action": "retry", "id": "t-x", "csrf": "guess"}).encode()
    request = urllib.request.Request(url + "/tasks/bulk", data=body, method="POST")  # noqa: S310
    request.add_header("Cookie", f"corral_session={session}; corral_csrf=abc")
    request.add_header("Origin", "https://evil.example")
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - http://
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_reprioritise_the_selected_tasks(server, open_page):
    """Set priority on two selected tasks changes theirs and writes task.reprioritised."""
    server.start()
    with server.store() as store:
        picked = [enqueue(store, NewTask(title=f"pick {i}")).id for i in range(2)]
        other = enqueue(store, NewTask(title="leave")).id
    page = open_page(server.url + "/tasks")
    for i in range(2):
        page.get_by_label(f"Select pick {i}").check()
    page.get_by_label("Priority", exact=True).fill("7")
    page.get_by_role("button", name="Set priority").click()
    expect(page.get_by_role("status")).to_contain_text("Re-prioritised 2 tasks")
    with server.store() as store:
        assert [7, 7, 0] == [store.tasks.get_task(t).priority for t in [*picked, other]]
        (event,) = store.events.list_events(
            EventFilter(task_id=picked[0], names=("task.reprioritised",))
        )
        assert {"from": 0, "to": 7} == event.data
