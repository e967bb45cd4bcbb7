"""A task waiting for a person in a real browser: the overview names it and why, the tasks
page filters it, and its page answers it (the task ready again with the answer)."""

from __future__ import annotations

from playwright.sync_api import expect
from tests.dashboard.conftest import shoot

from corral.model.states import TaskStatus
from corral.model.tasks import NewTask
from corral.model.waiting import WaitKind, reason
from corral.model.workers import NewWorker
from corral.usecases import workers
from corral.usecases.claims import claim, wait
from corral.usecases.tasks import enqueue

REFUSED = reason(WaitKind.REFUSED, "Bash, Edit")


def _waiting(store, title: str) -> str:
    """A task whose run ended needing a person: refused Bash and Edit."""
    task = enqueue(store, NewTask(title=title))
    worker = workers.register(store, NewWorker(name=f"w-{task.id}")).worker
    wait(store, task.id, reason=REFUSED, token=claim(store, task.id, worker.id).token)
    return task.id


def test_a_person_answers_a_waiting_task_from_its_page(server, open_page):
    """Overview and tasks filter show the waiting task and its reason; the task page's
    Answer form sends it back to ready with the text, shown in its fields and timeline."""
    server.start()
    with server.store() as store:
        enqueue(store, NewTask(title="just ready"))
        task_id = _waiting(store, "deploy the docs")
    page = open_page(server.url + "/")
    card = page.get_by_role("region", name="Waiting for a person")
    expect(card.get_by_role("link", name="deploy the docs")).to_be_visible()
    expect(card).to_contain_text(REFUSED)
    page.goto(server.url + "/tasks?status=waiting")
    expect(page.get_by_role("link", name="deploy the docs")).to_be_visible()
    expect(page.get_by_role("link", name="just ready")).to_have_count(0)
    page.get_by_role("link", name="deploy the docs").click()
    expect(page.locator("#waiting-reason")).to_contain_text(f"Waiting for a person: {REFUSED}")
    shoot(page, "task-waiting")
    page.get_by_label("Answer").fill("You may run Bash; edit docs/ only.")
    page.get_by_role("button", name="Answer").click()
    expect(page.get_by_role("status")).to_contain_text("Answered: the task is ready again.")
    expect(page.get_by_text("You may run Bash; edit docs/ only.")).to_be_visible()
    expect(page.get_by_role("cell", name="task.answered")).to_be_visible()
    with server.store() as store:
        answered = store.tasks.get_task(task_id)
    assert (TaskStatus.READY, "You may run Bash; edit docs/ only.", REFUSED) == (
        answered.status,
        answered.answer,
        answered.answered_reason,
    )


PERMISSION = reason(WaitKind.PERMISSION, 'Bash {"command": "git push"}')


def test_a_person_denies_a_permission_from_its_page(server, open_page):
    """A task waiting on a permission (MCP's permission_prompt) shows Allow and Deny instead
    of Answer; Deny with a reason in the answer box answers `deny: WHY`."""
    server.start()
    with server.store() as store:
        task = enqueue(store, NewTask(title="push the branch"))
        worker = workers.register(store, NewWorker(name="w-perm")).worker
        token = claim(store, task.id, worker.id).token
        wait(store, task.id, reason=PERMISSION, token=token)
    page = open_page(f"{server.url}/tasks/{task.id}")
    expect(page.locator("#waiting-reason")).to_contain_text(PERMISSION)
    expect(page.get_by_role("button", name="Answer")).to_have_count(0)
    expect(page.get_by_role("button", name="Allow")).to_be_visible()
    page.get_by_label("Answer").fill("never push from a task")
    page.get_by_role("button", name="Deny").click()
    expect(page.get_by_role("status")).to_contain_text("Answered: the task is ready again.")
    with server.store() as store:
        answered = store.tasks.get_task(task.id)
    assert (TaskStatus.READY, "deny: never push from a task", PERMISSION) == (
        answered.status,
        answered.answer,
        answered.answered_reason,
    )
