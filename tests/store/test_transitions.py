"""Conformance: failure and retry with backoff, cancel, retry, review, and results."""

# PLR0917: pytest passes fixtures as parameters.
# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

import corral
from corral import (
    EventFilter,
    FakeClock,
    InvalidTransition,
    Settings,
    Store,
    Task,
    TaskStatus,
    Worker,
)

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
Names = Callable[..., list[str]]
NON_FINAL = [
    TaskStatus.BLOCKED,
    TaskStatus.READY,
    TaskStatus.RUNNING,
    TaskStatus.WAITING,
    TaskStatus.IN_REVIEW,
    TaskStatus.APPROVED,
]
RETRIED = [TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.WAITING]
FINAL = [TaskStatus.DONE, TaskStatus.FAILED, TaskStatus.CANCELLED]


@pytest.fixture
def in_state(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> Callable[[TaskStatus], Task]:
    """Bring a fresh task to `status` through the use cases only."""

    def make(status: TaskStatus) -> Task:
        if status is TaskStatus.BLOCKED:
            return add("blocked", depends_on=(add("blocker", kind="elsewhere").id,))
        if status is TaskStatus.CANCELLED:
            return corral.cancel(store, add("cancelled").id)
        reviewed = status in (TaskStatus.IN_REVIEW, TaskStatus.APPROVED)
        task = add(status.value, max_attempts=1, requires_review=reviewed)
        if status is TaskStatus.READY:
            return task
        claim = corral.claim(store, task.id, worker(f"w-{status}").id, settings=settings)
        return _from_running(store, task.id, claim.token, status, settings)

    return make


def _from_running(
    store: Store, task_id: str, token: int, status: TaskStatus, settings: Settings
) -> Task:
    """The running task `task_id` brought to `status` under its claim's `token`."""
    if status is TaskStatus.FAILED:
        return corral.fail(store, task_id, error="boom", token=token, settings=settings)
    if status is TaskStatus.WAITING:
        return corral.wait(store, task_id, reason="question: which one?", token=token)
    if status in (TaskStatus.DONE, TaskStatus.IN_REVIEW, TaskStatus.APPROVED):
        done = corral.complete(store, task_id, token=token)
        if status is TaskStatus.APPROVED:
            done = store.reviews.approve(task_id, commit=None, note=None, actor="test")
        return done
    return store.tasks.get_task(task_id)


def test_the_state_builder_reaches_every_state(in_state: Callable[[TaskStatus], Task]) -> None:
    """Every task state is reachable through the public use cases."""
    assert list(TaskStatus) == [in_state(status).status for status in TaskStatus]


def test_fail_retries_with_doubling_backoff_until_max_attempts(
    store: Store,
    clock: FakeClock,
    settings: Settings,
    add: Add,
    worker: MakeWorker,
    events: Names,
) -> None:
    """Each failure waits base * 2**(n-1) in ready; the last one fails the task with its error."""
    task = add(max_attempts=3)
    w = worker()
    delays = []
    for attempt in (1, 2):
        claim = corral.claim(store, task.id, w.id, settings=settings)
        failed = corral.fail(
            store, task.id, error=f"error {attempt}", token=claim.token, settings=settings
        )
        assert (TaskStatus.READY, attempt, f"error {attempt}") == (
            failed.status,
            failed.attempts,
            failed.last_error,
        )
        delay_s = (failed.run_after - store.now()).total_seconds()
        delays.append(delay_s)
        assert None is corral.claim_next(store, w.id, settings=settings)
        clock.advance(delay_s)
    claim = corral.claim(store, task.id, w.id, settings=settings)
    final = corral.fail(store, task.id, error="error 3", token=claim.token, settings=settings)
    assert [settings.retry_base_s, 2 * settings.retry_base_s] == delays
    assert (TaskStatus.FAILED, "error", "error 3", 3, store.now()) == (
        final.status,
        final.failure_reason,
        final.last_error,
        final.attempts,
        final.finished_at,
    )
    assert 3 == store.workers.get_worker(w.id).failed_total
    assert [
        "task.created",
        "task.claimed",
        "task.retry_scheduled",
        "task.claimed",
        "task.retry_scheduled",
        "task.claimed",
        "task.failed",
    ] == events(task_id=task.id)


def test_retry_delays_are_capped_by_retry_max_s(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Backoff never exceeds retry_max_s, however many attempts failed."""
    capped = dataclasses.replace(settings, retry_base_s=10.0, retry_max_s=15.0)
    task = add(max_attempts=5, retry_base_s=10.0)
    w = worker()
    delays = []
    for _ in range(3):
        claim = corral.claim(store, task.id, w.id, settings=capped)
        failed = corral.fail(store, task.id, error="x", token=claim.token, settings=capped)
        delays.append((failed.run_after - store.now()).total_seconds())
        clock.advance(delays[-1])
    assert [10.0, 15.0, 15.0] == delays


def test_retry_scheduled_event_carries_the_delay(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """task.retry_scheduled records the error as its reason and the delay in its data."""
    task = add()
    claim = corral.claim(store, task.id, worker().id, settings=settings)
    corral.fail(store, task.id, error="flaky", token=claim.token, settings=settings)
    [last] = store.events.list_events(EventFilter(task_id=task.id, limit=1))
    assert ("task.retry_scheduled", "flaky", {"delay_s": settings.retry_base_s}) == (
        last.name,
        last.reason,
        last.data,
    )
    assert ("running", "ready", claim.token) == (last.from_status, last.to_status, last.token)


@pytest.mark.parametrize("status", NON_FINAL)
def test_cancel_works_from_every_non_final_state(
    store: Store, in_state: Callable[[TaskStatus], Task], status: TaskStatus
) -> None:
    """Any non-final task can be cancelled; it ends finished, with no active claim, and an event."""
    task = in_state(status)
    cancelled = corral.cancel(store, task.id, reason="no longer wanted")
    assert (TaskStatus.CANCELLED, None, store.now()) == (
        cancelled.status,
        cancelled.token,
        cancelled.finished_at,
    )
    assert None is store.claims.active_claim(task.id)
    [last] = store.events.list_events(EventFilter(task_id=task.id, limit=1))
    assert ("task.cancelled", str(status), "cancelled", "no longer wanted") == (
        last.name,
        last.from_status,
        last.to_status,
        last.reason,
    )


def test_cancelling_a_running_task_frees_its_worker(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """The holder of a cancelled task goes back to idle and may claim again."""
    task, other = add("task"), add("other")
    w = worker()
    corral.claim(store, task.id, w.id, settings=settings)
    corral.cancel(store, task.id)
    assert corral.WorkerStatus.IDLE == store.workers.get_worker(w.id).status
    claim = corral.claim_next(store, w.id, settings=settings)
    assert claim is not None
    assert other.id == claim.task_id


@pytest.mark.parametrize("status", FINAL)
def test_cancel_from_a_final_state_is_refused_naming_it(
    store: Store, in_state: Callable[[TaskStatus], Task], events: Names, status: TaskStatus
) -> None:
    """Cancelling a finished task is InvalidTransition naming its state, and changes nothing."""
    task = in_state(status)
    before, seen = store.tasks.get_task(task.id), events()
    with pytest.raises(InvalidTransition, match=f"cannot cancel task {task.id}: it is {status}$"):
        corral.cancel(store, task.id)
    assert before == store.tasks.get_task(task.id)
    assert seen == events()


@pytest.mark.parametrize("status", RETRIED)
def test_retry_puts_a_failed_cancelled_or_waiting_task_back_with_a_fresh_budget(
    store: Store, in_state: Callable[[TaskStatus], Task], status: TaskStatus
) -> None:
    """retry makes the task ready now, attempts and crashes reset, failure reason cleared."""
    task = in_state(status)
    retried = corral.retry(store, task.id)
    assert (TaskStatus.READY, 0, 0, None, None, store.now()) == (
        retried.status,
        retried.attempts,
        retried.crashes,
        retried.failure_reason,
        retried.finished_at,
        retried.run_after,
    )
    [last] = store.events.list_events(EventFilter(task_id=task.id, limit=1))
    assert ("task.retried", str(status), "ready") == (
        last.name,
        last.from_status,
        last.to_status,
    )


@pytest.mark.parametrize("status", [s for s in [*NON_FINAL, TaskStatus.DONE] if s not in RETRIED])
def test_retry_from_any_other_state_is_refused_naming_it(
    store: Store, in_state: Callable[[TaskStatus], Task], status: TaskStatus
) -> None:
    """Retry from any state but failed, cancelled or waiting is InvalidTransition naming that
    state."""
    task = in_state(status)
    before = store.tasks.get_task(task.id)
    with pytest.raises(InvalidTransition, match=f"it is {status}$") as caught:
        corral.retry(store, task.id)
    assert status == caught.value.current
    assert before == store.tasks.get_task(task.id)


def test_retry_of_a_task_whose_dependency_is_not_done_makes_it_blocked(
    store: Store, add: Add
) -> None:
    """A retried task goes back to blocked while a dependency is still pending."""
    blocker = add("blocker")
    task = add("task", depends_on=(blocker.id,))
    corral.cancel(store, task.id)
    assert TaskStatus.BLOCKED == corral.retry(store, task.id).status


def test_an_in_review_task_cannot_be_completed_again(
    store: Store, in_state: Callable[[TaskStatus], Task]
) -> None:
    """complete on an in_review task (no active claim) is refused naming the state."""
    task = in_state(TaskStatus.IN_REVIEW)
    with pytest.raises(InvalidTransition, match="it is in_review"):
        corral.complete(store, task.id)


@pytest.mark.parametrize("result", [None, "ok", 42, 1.5, True, [1, "two"], {"files": ["a.py"]}])
def test_complete_stores_any_json_result(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, result: Any
) -> None:
    """Any JSON value given as a result reads back equal, scalars included."""
    task = add()
    claim = corral.claim(store, task.id, worker().id, settings=settings)
    corral.complete(store, task.id, token=claim.token, result=result)
    assert result == store.tasks.get_task(task.id).result


def test_a_late_holder_may_report_until_the_reconciler_expires_its_claim(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A lease past its expiry stays its holder's until reconciled, so late work is not wasted."""
    task = add(timeout_s=5)
    claim = corral.claim(store, task.id, worker().id, settings=settings)
    clock.advance(10)
    assert claim.lease_expires_at < store.now()
    done = corral.complete(store, task.id, token=claim.token)
    assert TaskStatus.DONE == done.status
    assert store.now() == done.finished_at
