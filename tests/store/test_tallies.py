"""Conformance: the tallies /metrics reads are sums over the event log, each event once.

Completions and final failures by queue and kind, the reconciler's repairs by the event
that records each, a claim's queue wait from when its task became claimable, and a run's
duration: measured on the fake clock, so each lands in a known bucket.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import time
from collections.abc import Callable

from tests.conftest import run_under

import corral
from corral import FakeClock, RunOutcome, Settings, Store, Task, Worker
from corral.model.event_cursors import EventCursor
from corral.model.tallies import REPAIRS, RUN_BOUNDS_S, WAIT_BOUNDS_S, Tallies

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]


def _tally(store: Store, after: EventCursor | None = None) -> tuple[Tallies, EventCursor]:
    rows, cursor = store.tallies.event_tallies(after)
    tallies = Tallies()
    tallies.add(rows)
    return tallies, cursor


def _settled(store: Store, done: Callable[[Tallies], bool]) -> Tallies:
    """The tallies of the whole log once its last event has settled (`done` says when).
    On PostgreSQL the settled prefix ends before any transaction still open on the server,
    and the suite's other processes run their own on the same server: the last event may
    wait a moment."""
    deadline = time.monotonic() + 10
    tallies, _ = _tally(store)
    while not done(tallies) and time.monotonic() < deadline:
        time.sleep(0.01)
        tallies, _ = _tally(store)
    return tallies


def _bucket(bounds: tuple[float, ...], seconds: float) -> int:
    return sum(1 for b in bounds if b < seconds)


def test_completions_failures_waits_and_runs_are_counted_by_queue_and_kind(
    store: Store, add: Add, worker: MakeWorker, clock: FakeClock, settings: Settings
) -> None:
    """A task claimed 30 s after it was added and run for 90 s: one completion, a wait in
    the 30 s bucket, a run in the 120 s one; a task failed at once: one failure, 0 s wait."""
    w = worker("w", kinds=("code",), queues=("api", "default"))
    slow = add("slow", queue="api", kind="code")
    clock.advance(30)
    claim = corral.claim(store, slow.id, w.id, settings=settings)
    run = store.runs.start_run(run_under(claim, transcript_path=None, stderr_path=None))
    clock.advance(90)
    store.runs.finish_run(run.id, outcome=RunOutcome.DONE, exit_code=0)
    corral.complete(store, slow.id, token=claim.token)
    doomed = add("doomed", max_attempts=1, kind="code")
    doomed_claim = corral.claim(store, doomed.id, w.id, settings=settings)
    corral.fail(store, doomed.id, error="no", token=doomed_claim.token, settings=settings)

    tallies = _settled(store, lambda t: bool(t.failed))

    assert {("api", "code"): 1} == dict(tallies.completed)
    assert {("default", "code"): 1} == dict(tallies.failed)
    waits = tallies.waits[("api", "code")]
    assert (1, 30.0) == (waits.counts[_bucket(WAIT_BOUNDS_S, 30)], waits.sum_s)
    assert 1 == tallies.waits[("default", "code")].counts[0]
    runs = tallies.runs[("api", "code")]
    assert (1, 90.0) == (runs.counts[_bucket(RUN_BOUNDS_S, 90)], runs.sum_s)
    assert dict.fromkeys(REPAIRS, 0) == tallies.repairs


def test_a_stretch_counted_from_a_cursor_adds_up_to_the_whole_log(
    store: Store, add: Add, worker: MakeWorker, settings: Settings
) -> None:
    """Counting on from the cursor each read returns counts every event once: the sums of
    the stretches are the count of the whole log."""
    w = worker("w")
    running, cursor = Tallies(), None
    for n in range(3):
        task = add(f"t{n}")
        token = corral.claim(store, task.id, w.id, settings=settings).token
        corral.complete(store, task.id, token=token)
        rows, cursor = store.tallies.event_tallies(cursor)
        running.add(rows)
    deadline = time.monotonic() + 10  # the last events may settle a moment later (_settled)
    while sum(dict(running.completed).values()) < 3 and time.monotonic() < deadline:
        time.sleep(0.01)
        rows, cursor = store.tallies.event_tallies(cursor)
        running.add(rows)
    again, _ = store.tallies.event_tallies(cursor)
    whole, _ = _tally(store)

    assert [] == again
    assert {("default", "default"): 3} == dict(running.completed) == dict(whole.completed)
    assert whole.waits == running.waits


def test_a_released_task_waits_from_its_release_not_from_when_it_was_added(
    store: Store, add: Add, worker: MakeWorker, clock: FakeClock, settings: Settings
) -> None:
    """Added, claimed at once, held 100 s, released, claimed 10 s later: waits of 0 and 10 s."""
    w = worker("w")
    task = add("held")
    claim = corral.claim(store, task.id, w.id, settings=settings)
    clock.advance(100)
    corral.release(store, task.id, token=claim.token, settings=settings)
    clock.advance(10)
    corral.claim(store, task.id, w.id, settings=settings)

    key = ("default", "default")
    tallies = _settled(store, lambda t: key in t.waits and sum(t.waits[key].counts) >= 2)
    waits = tallies.waits[key]

    assert (2, 10.0) == (sum(waits.counts), waits.sum_s)


def test_the_reconcilers_repairs_are_counted_by_the_event_that_records_them(
    store: Store,
    add: Add,
    worker: MakeWorker,
    silence: Callable[[int], None],
    settings: Settings,
) -> None:
    """A worker that goes silent holding a task: stale, then dead, its claim a crash; the
    retry that follows is no failure."""
    w = worker("w")
    task = add("orphaned")
    corral.claim(store, task.id, w.id, settings=settings)
    silence(1)
    corral.reconcile_once(store, settings=settings)
    silence(settings.dead_after_missed)
    corral.reconcile_once(store, settings=settings)

    tallies = _settled(store, lambda t: t.repairs.get("task.crashed", 0) >= 1)

    expected = dict.fromkeys(REPAIRS, 0) | {"worker.stale": 1, "worker.dead": 1, "task.crashed": 1}
    assert expected == tallies.repairs
    assert {} == dict(tallies.failed)
