"""What a newcomer to the dashboard reads first (issue 30), in a real browser: the runs and
reviews pages, a transcript's session line, a running task's review, plurals, who acted,
the pool's slots, events by task title, providers parked, the chart's width, a console
without errors, phone-sized pages, and an overview current when opened."""

from __future__ import annotations

import json
import os
import re

import pytest
from playwright.sync_api import expect
from tests.conftest import run_under
from tests.dashboard.conftest import shoot
from tests.git.conftest import claim_into_worktree

from corral.foundation.settings import Settings
from corral.git import worktrees
from corral.model.runs import RunOutcome
from corral.model.tasks import NewTask
from corral.model.workers import NewWorker
from corral.store.location import runs_dir
from corral.usecases import workers
from corral.usecases.claims import claim, complete
from corral.usecases.reviews import submit
from corral.usecases.tasks import enqueue

PAGES = ("/", "/tasks", "/runs", "/reviews", "/workers", "/queues", "/schedules", "/events")
CLAUDE_INIT = {
    "type": "system",
    "subtype": "init",
    "cwd": "/work",
    "session_id": "5f0c",
    "tools": ["Task", "Bash", "Glob", "Grep", "Read", "Edit", "Write", "WebFetch", "Skill"],
    "mcp_servers": [],
    "model": "claude-sonnet-4-5",
    "permissionMode": "bypassPermissions",
    "slash_commands": ["compact", "context"],
    "claude_code_version": "2.1.30",
}


def _ran(store, title: str, worker_name: str, usage: dict[str, float] | None) -> tuple[str, str]:
    """A task run once to done by a worker of its own, with `usage`; (task id, run id)."""
    task = enqueue(store, NewTask(title=title))
    worker = workers.register(store, NewWorker(name=worker_name)).worker
    held = claim(store, task.id, worker.id)
    run = store.runs.start_run(run_under(held, transcript_path=None, stderr_path=None))
    store.runs.finish_run(run.id, outcome=RunOutcome.DONE, exit_code=0, usage=usage)
    complete(store, task.id, token=held.token)
    return task.id, run.id


def test_the_runs_page_lists_runs_with_usage_and_cost_and_filters_them(server, open_page):
    """Every run with its task's title, worker, tokens and cost, the page's cost summed;
    the task filter leaves one run, and the count agrees with it ("1 run matches"); a
    page of one run leads to the older one."""
    server.start()
    with server.store() as store:
        usage = {"input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.25}
        first, _ = _ran(store, "write the parser", "builder-1", usage)
        usage = {"input_tokens": 10, "output_tokens": 5, "cost_usd": 0.5}
        _ran(store, "fix the lexer", "builder-2", usage)
    page = open_page(server.url + "/runs")
    expect(page.locator("#runs-count")).to_have_text("2 runs; this page's cost $0.7500.")
    row = page.get_by_role("row").filter(has_text="write the parser")
    expect(row.get_by_role("cell", name="1200 / 300")).to_be_visible()
    expect(row.get_by_role("cell", name="$0.2500")).to_be_visible()
    expect(row.get_by_role("link", name="builder-1")).to_be_visible()
    shoot(page, "runs")
    page.get_by_label("Task").fill(first)
    page.get_by_role("button", name="Filter").click()
    expect(page.locator("#runs-count")).to_have_text("1 run matches; this page's cost $0.2500.")
    expect(page.get_by_role("link", name="fix the lexer")).to_have_count(0)
    page = open_page(server.url + "/runs?limit=1")
    expect(page.get_by_role("link", name="fix the lexer")).to_be_visible()  # the newest
    page.get_by_role("link", name="Older runs").click()
    expect(page.get_by_role("link", name="write the parser")).to_be_visible()
    expect(page.get_by_role("link", name="Older runs")).to_have_count(0)


def test_the_runs_page_refuses_a_bad_limit_with_one_line(server, open_page):
    """`limit=0` is a 422 naming the field, not a page of nothing."""
    server.start()
    page = open_page(server.url + "/runs?limit=0")
    expect(page.locator("main")).to_contain_text("limit")
    assert 422 == page.request.get(server.url + "/runs?limit=0").status


def test_the_reviews_page_shows_each_review_with_its_diff_size_and_age(repo_server, open_page):
    """A task in review: its title, branch, how long it has waited, and git's summary of
    its diff (files changed, lines added)."""
    server = repo_server
    with server.store() as store:
        task = enqueue(store, NewTask(title="add greeting", requires_review=True))
        trees = worktrees.Worktrees.open(str(server.folder), Settings().worktree)
        files = {"greeting.txt": "hi\nthere\n"}
        held, _ = claim_into_worktree(store, Settings(), trees, task.id, "w1", files)
        submit(store, task.id, token=held.token, note="please look")
    server.start()
    page = open_page(server.url + "/reviews")
    expect(page.locator("#reviews-count")).to_have_text("1 review waiting.")
    row = page.get_by_role("row").filter(has_text="add greeting")
    expect(row).to_contain_text("1 file changed, 2 insertions(+)")
    expect(row).to_contain_text("in review")
    waited = re.compile(r"^\d+(s|m\d+s)$")  # whole seconds (0s on a fast machine); not stale
    expect(row.get_by_role("cell").nth(3)).to_have_text(waited)
    shoot(page, "reviews")


def test_a_transcript_opens_with_the_sessions_one_line(server, open_page):
    """Claude Code's init event is one line (model, tools, permission mode), not its JSON."""
    server.start()
    with server.store() as store:
        task = enqueue(store, NewTask(title="agent job"))
        worker = workers.register(store, NewWorker(name="w")).worker
        held = claim(store, task.id, worker.id)
        transcript = os.path.join(runs_dir(server.db), "r-init.jsonl")
        os.makedirs(os.path.dirname(transcript), exist_ok=True)
        with open(transcript, "w") as out:
            out.write(json.dumps(CLAUDE_INIT) + "\n")
        store.runs.start_run(run_under(held, transcript_path=transcript, stderr_path=None))
    page = open_page(f"{server.url}/tasks/{task.id}")
    line = page.locator("#transcript .turn-session")
    expect(line).to_have_text(
        "Session Claude Code 2.1.30: model claude-sonnet-4-5, 9 tools (Task, Bash, Glob,"
        " Grep, Read, Edit, Write, WebFetch and 1 more), permission mode bypassPermissions"
    )
    expect(page.locator("#transcript")).not_to_contain_text("slash_commands")
    assert 1 == page.locator("#transcript .turn").count()


def test_a_running_task_shows_no_empty_diff_box(repo_server, open_page):
    """A task running on a branch with nothing committed yet: no empty diff box but a line
    saying so; its usage says "1 run"."""
    server = repo_server
    with server.store() as store:
        task = enqueue(store, NewTask(title="just started"))
        trees = worktrees.Worktrees.open(str(server.folder), Settings().worktree)
        held, _ = claim_into_worktree(store, Settings(), trees, task.id, "builder-7", {})
        store.runs.start_run(run_under(held, transcript_path=None, stderr_path=None))
    server.start()
    page = open_page(f"{server.url}/tasks/{task.id}")
    expect(page.get_by_text("No change on the branch against its base.")).to_be_visible()
    assert 0 == page.locator("pre.diff").count()
    expect(page.locator("#live dd").filter(has_text="run")).to_have_text("1 run")


def test_the_pool_slots_are_fields(server, open_page):
    """The orchestrator's slots show as a table of name, group, state, worker, pid, restarts
    and exit code, not their JSON; a slot holding back for memory says why."""
    server.start()
    with server.store() as store:
        worker = workers.register(store, NewWorker(name="slot-worker")).worker
        seen = store.orchestrators.get_orchestrator()
        store.orchestrators.acquire_orchestrator(pid=4242, host="box", config={}, seen=seen)
        slot = {"name": "codex-1", "group": "codex", "state": "running", "worker_id": worker.id,
                "pid": 77, "adopted": False, "restarts": 2, "last_exit_code": 1}  # fmt: skip
        held = {**slot, "name": "codex-2", "worker_id": None, "pid": 78, "held": "a run needs 9 MB"}
        store.orchestrators.beat_orchestrator(
            pid=4242, host="box", slots=[slot, held], reconciled=False
        )
    page = open_page(server.url + "/workers")
    slots = page.get_by_role("table", name="The pool's slots")
    row = slots.get_by_role("row").filter(has_text="codex-1")
    for shown in ("codex", "running", "slot-worker", "77", "2", "1"):
        expect(row.get_by_role("cell", name=shown, exact=True)).to_be_visible()
    held_row = slots.get_by_role("row").filter(has_text="codex-2")
    expect(held_row).to_contain_text("held: a run needs 9 MB")
    expect(slots).not_to_contain_text("{")


def test_events_name_their_task_by_title_and_their_actor_by_holder(server, open_page):
    """The events page's task column is the task's title, linking to it; By names the
    worker whose claim's token acted."""
    server.start()
    with server.store() as store:
        task_id, _ = _ran(store, "compile the docs", "builder-3", None)
    page = open_page(server.url + f"/events?task={task_id}")
    done = page.get_by_role("row").filter(has_text="task.completed")
    expect(done.get_by_role("link", name="compile the docs")).to_be_visible()
    expect(done).to_contain_text("builder-3")
    expect(page.locator("main")).not_to_contain_text("token:")
    page = open_page(server.url + f"/tasks/{task_id}")
    timeline = page.get_by_role("table", name="Timeline")
    expect(timeline.get_by_role("row").filter(has_text="task.completed")).to_contain_text(
        "builder-3"
    )
    expect(timeline).not_to_contain_text("token:")


def test_the_overview_shows_parked_providers_and_a_chart_as_wide_as_the_page(server, open_page):
    """A parked provider account is listed under Providers parked with its reason; the runs
    chart spans its section."""
    server.start()
    with server.store() as store:
        store.providers.park_provider(
            "claude-work", until=store.now().replace(year=2100), reason="usage limit", actor="w"
        )
    page = open_page(server.url + "/")
    parked = page.get_by_role("region", name="Providers parked")
    expect(parked).to_contain_text("claude-work until 2100-")
    expect(parked).to_contain_text("usage limit")
    chart = page.locator("svg.chart").bounding_box()
    section = page.get_by_role("region", name="Runs per minute, last hour").bounding_box()
    assert chart is not None and section is not None
    assert chart["width"] >= section["width"] - 1


def test_the_overview_is_current_when_opened(server, open_page):
    """Tasks added after the overview was last read show on the next page opened at once,
    not after a reload."""
    server.start()
    page = open_page(server.url + "/")
    expect(page.get_by_text("No task yet.").first).to_be_visible()
    with server.store() as store:
        for n in range(3):
            enqueue(store, NewTask(title=f"t{n}"))
    page.goto(server.url + "/")
    status = page.get_by_role("region", name="Tasks by status")
    # Read as loaded, without waiting: a page behind the log would load itself again later.
    assert "Tasks by status ready 3" == " ".join(status.inner_text().split())


@pytest.mark.parametrize("width", [1280, 375])
def test_every_page_opens_without_console_errors_and_fits_a_phone(server, open_page, width):
    """Each page, wide and phone-sized: nothing logged to the console (open_page checks:
    no refused inline style, no missing /favicon.ico), and no page-wide sideways scroll:
    a wide table scrolls in its own box."""
    server.start()
    with server.store() as store:
        task_id, _ = _ran(store, "a task with a rather long title " * 3, "builder-9", None)
    for path in (*PAGES, f"/tasks/{task_id}"):
        page = open_page(server.url + path, width=width)
        page.wait_for_load_state("networkidle")
        wide, shown = page.evaluate(
            "() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]"
        )
        assert wide <= shown, (path, wide, shown)
    if width == 375:
        shoot(page, "phone-task")
