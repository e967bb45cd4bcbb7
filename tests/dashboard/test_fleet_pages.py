"""The workers, queues and events pages in a real browser: drain a worker and see it stop
claiming, edit a queue's limits, pause a provider, filter the events and see one arrive."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from tests.dashboard.conftest import shoot

from corral.foundation.errors import CorralError
from corral.model.schedules import NewSchedule
from corral.model.states import WorkerStatus
from corral.model.tasks import NewTask
from corral.model.workers import BeatFigures, NewWorker
from corral.usecases import queues, usage, workers
from corral.usecases.claims import claim, complete
from corral.usecases.schedules import add_schedule
from corral.usecases.tasks import enqueue


def test_drain_a_worker_and_it_claims_nothing_more(server, open_page):
    """Drain on the workers page makes the worker draining; a claim for it is refused."""
    server.start()
    with server.store() as store:
        busy = workers.register(store, NewWorker(name="builder-1", hostname="box-a")).worker
        task = enqueue(store, NewTask(title="compile"))
        claim(store, task.id, busy.id)
        first = workers.register(store, NewWorker(name="builder-2", hostname="box-b")).worker
        workers.deregister(store, first.id, reason="crashed")  # and restarted:
        idle = workers.register(store, NewWorker(name="builder-2", hostname="box-b")).worker
        figures = BeatFigures(
            cpu_percent=3.0, rss_bytes=40 << 20, agent_cpu_percent=187.0, agent_rss_bytes=812 << 20
        )
        workers.heartbeat(store, idle.id, figures=figures)
    page = open_page(server.url + "/workers")
    expect(page.get_by_role("link", name="compile")).to_be_visible()
    for column in (
        "Claims",
        "Restarts",
        "Runner CPU",
        "Runner memory",
        "Agent CPU",
        "Agent memory",
    ):
        expect(page.get_by_role("columnheader", name=column)).to_be_visible()
    row = page.locator(f"tr#{idle.id}")
    for shown in ("0 / 1", "3%", "40 MiB", "187%", "812 MiB"):
        expect(row.get_by_role("cell", name=shown, exact=True)).to_be_visible()
    expect(row.get_by_role("cell").nth(8)).to_have_text("1")  # one restart before it
    expect(page.locator(f"tr#{busy.id}").get_by_role("cell", name="1 / 1")).to_be_visible()
    shoot(page, "workers")
    page.get_by_role("button", name="Drain builder-2").click()
    expect(page.get_by_role("status")).to_contain_text("Draining builder-2")
    with server.store() as store:
        assert WorkerStatus.DRAINING == store.workers.get_worker(idle.id).status
        other = enqueue(store, NewTask(title="more"))
        with pytest.raises(CorralError):
            claim(store, other.id, idle.id)


def test_edit_queue_limits_and_pause_a_provider(server, open_page):
    """Saving a queue's limits writes them; Pause pauses the provider account."""
    server.start()
    with server.store() as store:
        enqueue(store, NewTask(title="t", queue="code"))
        queues.set_queue_limits(store, "code", {"max_running": 4})
        usage.set_provider(store, "claude-work", max_running=3)
    page = open_page(server.url + "/queues")
    page.get_by_label("max_ready").fill("100")
    page.get_by_role("button", name="Save the limits of code").click()
    expect(page.get_by_role("status")).to_contain_text("Limits of code saved")
    page.get_by_role("button", name="Pause").click()
    expect(page.get_by_role("status")).to_contain_text("Paused claude-work")
    shoot(page, "queues")
    with server.store() as store:
        (stat,) = queues.queue_stats(store, "code")
        assert (100, 4) == (stat.limits.max_ready, stat.limits.max_running)
        assert usage.provider_states(store, "claude-work")[0].paused


def test_events_filter_and_arrive_live(server, open_page):
    """Filtering by name shows only those events; a new one appears without a reload."""
    server.start()
    with server.store() as store:
        first = enqueue(store, NewTask(title="first"))
    page = open_page(server.url + "/events")
    page.get_by_label("Event", exact=True).select_option("task.cancelled")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No event matches.")).to_be_visible()
    page.wait_for_function("() => window.htmx !== undefined")
    page.wait_for_timeout(300)  # the event stream connects
    assert 0 == server.corral("cancel", first.id).returncode
    expect(page.get_by_role("cell", name="task.cancelled")).to_be_visible()
    shoot(page, "events")


def test_a_stale_review_shows_on_the_events_page_once(server, open_page):
    """`corral reconcile` twice past review_stale_after: one review.stale row for the task."""
    server.start()
    with server.store() as store:
        task = enqueue(store, NewTask(title="waits for review", requires_review=True))
        worker = workers.register(store, NewWorker(name="w")).worker
        held = claim(store, task.id, worker.id)
        complete(store, task.id, token=held.token)
    server.env["CORRAL_REVIEW_STALE_AFTER_S"] = "0.001"  # the commands' only: serve runs
    for _ in range(2):
        done = server.corral("reconcile")
        assert 0 == done.returncode, done.stderr
    page = open_page(server.url + "/events?type=review.stale")
    rows = page.get_by_role("cell", name="review.stale")
    expect(rows).to_have_count(1)
    expect(page.get_by_role("row").filter(has_text="review.stale")).to_contain_text(task.id)


def test_schedules_show_next_fires_and_pause_and_trigger(server, open_page):
    """A schedule shows its next fire times; Trigger now makes its task, Pause pauses it."""
    server.start()
    with server.store() as store:
        add_schedule(
            store, NewSchedule(id="nightly", cron="0 0 3 * * *", template={"title": "sweep"})
        )
    page = open_page(server.url + "/schedules")
    expect(page.get_by_role("rowheader", name="nightly")).to_be_visible()
    page.get_by_role("button", name="Trigger nightly now").click()
    expect(page.get_by_role("status")).to_contain_text("Triggered nightly")
    page.get_by_role("button", name="Pause nightly").click()
    expect(page.get_by_role("status")).to_contain_text("Paused nightly")
    expect(page.get_by_role("button", name="Resume nightly")).to_be_visible()
    shoot(page, "schedules")
    with server.store() as store:
        schedule = store.schedules.get_schedule("nightly")
        assert schedule.paused
        assert "sweep" == store.tasks.get_task(schedule.last_task_id).title
