"""Conformance: `running_tasks`, what `corral status --watch` draws: the oldest active claims
with their tasks and unfinished runs, bounded by a limit."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable

from tests.conftest import run_under

import corral
from corral import FakeClock, RunOutcome, Settings, Store, Task, Worker

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]


def _run(store: Store, claim: corral.Claim, name: str) -> str:
    paths = {"transcript_path": f"/work/runs/{name}.out", "stderr_path": f"/work/runs/{name}.err"}
    return store.runs.start_run(run_under(claim, **paths)).id


def test_running_tasks_are_the_active_claims_oldest_first_with_their_runs(
    store: Store, settings: Settings, clock: FakeClock, add: Add, worker: MakeWorker
) -> None:
    """Each active claim comes with its task's title and the run it started; a claim with
    no run yet has empty run fields; tasks not running are left out."""
    holder = worker(max_concurrent=3).id
    add("never claimed")
    first = corral.claim(store, add("first").id, holder, settings=settings)
    clock.advance(1)
    second = corral.claim(store, add("second").id, holder, settings=settings)
    run_id = _run(store, first, "first")

    found = store.claims.running_tasks(10)

    assert [(first.task_id, "first", run_id), (second.task_id, "second", None)] == [
        (r.task_id, r.title, r.run_id) for r in found
    ]
    assert ("/work/runs/first.out", "/work/runs/first.err") == (
        found[0].transcript_path,
        found[0].stderr_path,
    )
    assert (holder, first.token, first.claimed_at) == (
        found[0].worker_id,
        found[0].token,
        found[0].claimed_at,
    )


def test_running_tasks_stop_at_the_limit_and_leave_finished_work_out(
    store: Store, settings: Settings, clock: FakeClock, add: Add, worker: MakeWorker
) -> None:
    """Only `limit` claims come back; a completed task and a finished run do not show."""
    holder = worker(max_concurrent=4).id
    claims = []
    for n in range(3):
        claims.append(corral.claim(store, add(f"task {n}").id, holder, settings=settings))
        clock.advance(1)
    ended = _run(store, claims[1], "ended")
    store.runs.finish_run(ended, outcome=RunOutcome.FAILED, exit_code=1)
    corral.complete(store, claims[0].task_id, token=claims[0].token)

    assert [(claims[1].task_id, None)] == [
        (r.task_id, r.run_id) for r in store.claims.running_tasks(1)
    ]
    assert [claims[1].task_id, claims[2].task_id] == [
        r.task_id for r in store.claims.running_tasks(5)
    ]
