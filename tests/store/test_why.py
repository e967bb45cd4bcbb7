"""Conformance: `why` explains where a task is and what it waits for, with stable codes."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable

import pytest

import corral
from corral import FakeClock, NotFound, Settings, Store, Task, TaskStatus, Worker

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]


def _codes(store: Store, task_id: str, settings: Settings) -> list[str]:
    return [reason.code for reason in corral.why(store, task_id, settings=settings).reasons]


def test_a_ready_task_with_an_idle_worker_is_claimable(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Nothing holds a ready task back when a matching worker has room."""
    task = add(kind="code")
    worker(kinds=("code",))
    assert ["claimable"] == _codes(store, task.id, settings)


def test_no_worker_of_the_kind_is_named(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """With no live worker that runs the task's kind, why says no_worker and names the kind."""
    task = add(kind="code", queue="q")
    worker(kinds=("review",))
    [reason] = corral.why(store, task.id, settings=settings).reasons
    assert "no_worker" == reason.code
    assert "kind 'code' in queue 'q'" in reason.message


def test_dead_and_draining_workers_do_not_count(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Only workers that may take claims count as able to run the task."""
    task = add()
    corral.drain(store, worker("draining").id)
    corral.deregister(store, worker("gone").id)
    assert ["no_worker"] == _codes(store, task.id, settings)


def test_an_assignee_that_is_not_live_is_no_worker(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A task assigned to a worker that is not live waits for that worker by name."""
    worker("someone-else")
    task = add(assignee="absent")
    [reason] = corral.why(store, task.id, settings=settings).reasons
    assert ("no_worker", True) == (reason.code, "worker absent" in reason.message)


def test_all_able_workers_busy(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """When every worker that could run the task is at capacity, why says workers_busy."""
    w = worker()
    corral.claim(store, add("first").id, w.id, settings=settings)
    task = add("second")
    assert ["workers_busy"] == _codes(store, task.id, settings)


def test_tasks_ahead_in_the_queue_are_counted(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """why counts ready tasks of the same queue that would be claimed first."""
    worker()
    add("urgent", priority=9)
    add("older")
    add("elsewhere", queue="other", priority=9)
    task = add("mine")
    [reason] = corral.why(store, task.id, settings=settings).reasons
    assert ("queued", "2 tasks ahead of it in queue default") == (reason.code, reason.message)


def test_a_delayed_task_says_until_when(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A task with run_after in the future is delayed, with the time left."""
    worker()
    task = add(run_after_s=90)
    [reason] = corral.why(store, task.id, settings=settings).reasons
    assert ("delayed", True) == (reason.code, "(in 1m30s)" in reason.message)
    clock.advance(90)
    assert ["claimable"] == _codes(store, task.id, settings)


def test_a_retry_backoff_shows_as_delayed(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A task waiting out its retry backoff is explained as delayed."""
    task = add()
    w = worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    corral.fail(store, task.id, error="x", token=claim.token, settings=settings)
    assert ["delayed"] == _codes(store, task.id, settings)


def test_a_running_task_is_held_by_its_worker(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """why on a running task names the holder, when it was last seen and the lease left."""
    task = add()
    w = worker("agent")
    corral.claim(store, task.id, w.id, lease_s=600, settings=settings)
    clock.advance(45)
    [reason] = corral.why(store, task.id, settings=settings).reasons
    assert "held" == reason.code
    assert f"held by worker {w.id} (agent, busy), last seen 45s ago" in reason.message
    assert "lease expires in 9m" in reason.message


def test_a_blocked_task_names_each_pending_dependency(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A blocked task lists blocked_by for every dependency that is not done."""
    done, pending = add("done"), add("pending")
    claim = corral.claim(store, done.id, worker().id, settings=settings)
    corral.complete(store, done.id, token=claim.token)
    task = add("blocked", depends_on=(done.id, pending.id))
    [reason] = corral.why(store, task.id, settings=settings).reasons
    assert ("blocked_by", f"blocked by {pending.id} (ready)") == (reason.code, reason.message)


def test_a_failed_task_names_its_error(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """why on a failed task gives the reason and the last error."""
    task = add(max_attempts=1)
    claim = corral.claim(store, task.id, worker().id, settings=settings)
    corral.fail(store, task.id, error="segfault", token=claim.token, settings=settings)
    diagnosis = corral.why(store, task.id, settings=settings)
    assert TaskStatus.FAILED == diagnosis.task.status
    [reason] = diagnosis.reasons
    assert ("failed", True) == (reason.code, "failed (error): segfault" in reason.message)
    assert {
        "task_id": task.id,
        "status": "failed",
        "reasons": [{"code": "failed", "message": reason.message}],
    } == diagnosis.to_dict()


def test_why_on_an_unknown_task_is_not_found(store: Store, settings: Settings) -> None:
    """why names a missing task as NotFound."""
    with pytest.raises(NotFound):
        corral.why(store, "t-missing", settings=settings)
