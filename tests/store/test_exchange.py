"""Conformance: the exchange, the one path of every claim and every reported outcome.

Runs on every store dialect; PostgreSQL runs it as one server-side function, SQLite as
statements (store/exchange.py), and these tests hold both to the same behaviour.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable

import pytest

import corral
from corral import (
    EventFilter,
    FakeClock,
    InvalidInput,
    NotFound,
    RunOutcome,
    Settings,
    Store,
    Task,
    TaskStatus,
    Worker,
)
from corral.foundation.durations import iso
from corral.model.exchange import Action, ClaimAsk, Report, RunStart
from corral.usecases import claims

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
RUN = RunStart(command=("handler",), cwd="/work")


def _claim_with_run(store: Store, worker_id: str, settings: Settings) -> corral.model.exchange.Held:
    (held,) = claims.exchange(
        store, worker_id, ask=ClaimAsk(limit=1, run=RUN), settings=settings
    ).held
    return held


@pytest.mark.parametrize(
    "lease_s",
    [60.0, 0.000001, 0.0000005, 0.0078125, 0.5, 12.3456785, 1 / 3, 86_399.999_999_5],
)
def test_task_claimed_keeps_the_lease_as_python_writes_it(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, lease_s: float
) -> None:
    """The lease in task.claimed's data is Python's isoformat of the claim's lease, whatever
    its fraction (the store writes it in SQL: microseconds, rounded half to even)."""
    task, w = add(), worker()
    claim = corral.claim(store, task.id, w.id, lease_s=lease_s, settings=settings)
    [claimed] = [
        e
        for e in store.events.list_events(EventFilter(task_id=task.id))
        if e.name == "task.claimed"
    ]
    assert {"lease_expires_at": iso(claim.lease_expires_at)} == claimed.data


def test_what_the_agent_reported_survives_its_runner(
    store: Store, settings: Settings, clock: FakeClock, add: Add, worker: MakeWorker
) -> None:
    """`corral done` under the run's token, then the runner dies: the run ends as done, not
    killed, and its run.finished says so."""
    task, w = add(), worker()
    held = _claim_with_run(store, w.id, settings)
    corral.complete(store, task.id, token=held.token)
    clock.advance(settings.heartbeat_interval_s * (settings.dead_after_missed + 1))
    corral.reconcile_once(store, settings=settings)
    run = store.runs.get_run(held.run_id or "")
    assert (RunOutcome.DONE, None) == (run.outcome, run.error)
    [finished] = [
        e
        for e in store.events.list_events(EventFilter(task_id=task.id))
        if e.name == "run.finished"
    ]
    assert ("done", None) == (finished.data["outcome"], finished.reason)  # type: ignore[index]


def test_a_run_whose_claim_ended_elsewhere_ends_as_lease_lost_with_the_task_state(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Cancelled while it ran: the runner's report is stale, its run ends lease_lost in the
    same exchange, with the task's state in its error."""
    task, w = add(), worker()
    held = _claim_with_run(store, w.id, settings)
    corral.cancel(store, task.id)
    report = Report.of(held, Action.COMPLETE, RunOutcome.DONE, exit_code=0)
    done = claims.exchange(store, w.id, reports=[report], settings=settings)
    assert [task.id] == [r.task_id for r in done.stale]
    assert {held.run_id: "lease_lost"} == done.settled
    run = store.runs.get_run(held.run_id or "")
    assert (RunOutcome.LEASE_LOST, 0) == (run.outcome, run.exit_code)
    assert "the claim ended while running (task is cancelled)" == run.error


def test_a_claim_by_an_unknown_worker_applies_none_of_the_reports(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """One exchange is one transaction: its claim refused as NotFound, its report is not kept."""
    task, w = add(), worker()
    held = _claim_with_run(store, w.id, settings)
    report = Report.of(held, Action.COMPLETE, RunOutcome.DONE)
    with pytest.raises(NotFound, match="w-nobody"):
        store.claims.exchange("w-nobody", reports=[report], ask=ClaimAsk(limit=1, lease_s=60.0))
    assert (TaskStatus.RUNNING, held.token) == (
        store.tasks.get_task(task.id).status,
        store.tasks.get_task(task.id).token,
    )


def test_a_task_is_reported_once_per_exchange(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Two reports of one task in one exchange are refused before anything is written."""
    task, w = add(), worker()
    held = _claim_with_run(store, w.id, settings)
    twice = [Report.of(held, Action.COMPLETE, RunOutcome.DONE)] * 2
    with pytest.raises(InvalidInput, match="one report per task"):
        store.claims.exchange(w.id, reports=twice)
    assert TaskStatus.RUNNING == store.tasks.get_task(task.id).status


def test_a_claim_needs_a_worker(store: Store, add: Add) -> None:
    """An exchange that asks for claims names the worker that claims."""
    add()
    with pytest.raises(InvalidInput, match="worker"):
        store.claims.exchange(None, ask=ClaimAsk(limit=1, lease_s=60.0))


def test_runs_described_task_by_task_keep_what_open_run_said(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A command's runs differ by task (its prompt, its folder): each keeps its own."""
    first, second = add("first"), add("second")
    w = worker(max_concurrent=2)

    def open_run(task: Task, token: int, run_id: str) -> RunStart:
        return RUN._replace(prompt=f"do {task.title}", cwd=f"/work/{task.id}")

    ask = ClaimAsk(limit=2, run=RUN)
    held = claims.exchange(store, w.id, ask=ask, open_run=open_run, settings=settings).held
    runs = {h.task.id: store.runs.get_run(h.run_id or "") for h in held}
    assert {
        first.id: ("do first", f"/work/{first.id}"),
        second.id: ("do second", f"/work/{second.id}"),
    } == {task_id: (run.prompt, run.cwd) for task_id, run in runs.items()}


def test_an_operator_report_acts_on_whatever_claim_is_active(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Without a token a report ends the active claim; with a holder, only that worker's."""
    task, w, other = add(), worker("w"), worker("other")
    corral.claim(store, task.id, w.id, settings=settings)
    with pytest.raises(corral.Refused, match=f"held by worker {w.id}, not {other.id}"):
        corral.release(store, task.id, worker_id=other.id)
    released = corral.release(store, task.id, worker_id=w.id)
    assert (TaskStatus.READY, None, 0) == (released.status, released.token, released.attempts)


def test_a_run_the_reconciler_finished_is_not_finished_again_by_its_stale_report(
    store: Store, settings: Settings, clock: FakeClock, add: Add, worker: MakeWorker
) -> None:
    """The reconciler ends a silent runner's run; the runner comes back and reports: its
    report is stale, the run keeps the reconciler's outcome and its one run.finished."""
    task, w = add(), worker()
    held = _claim_with_run(store, w.id, settings)
    assert store.runs.launch_run(
        held.opened_run()
    )  # its command started: a dead worker's is killed
    clock.advance(settings.heartbeat_interval_s * (settings.dead_after_missed + 1))
    corral.reconcile_once(store, settings=settings)
    report = Report.of(held, Action.COMPLETE, RunOutcome.DONE, exit_code=0)
    done = store.claims.exchange(w.id, reports=[report])
    assert {held.run_id: "killed"} == done.settled
    finished = [
        e.data
        for e in store.events.list_events(EventFilter(task_id=task.id))
        if e.name == "run.finished"
    ]
    assert [{"run_id": held.run_id, "outcome": "killed", "exit_code": None}] == finished
