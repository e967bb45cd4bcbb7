"""Conformance: defer gives a running task back until later, fenced, without counting an attempt."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

import corral
from corral import (
    EventFilter,
    FakeClock,
    InvalidInput,
    InvalidTransition,
    Settings,
    StaleToken,
    Store,
    Task,
    TaskStatus,
    Worker,
    WorkerStatus,
)
from corral.model.exchange import Action, Report

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
Names = Callable[..., list[str]]


def test_defer_returns_the_task_to_ready_after_the_delay(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """The task is ready again, not before now + delay, with its attempt given back."""
    task, w = add(), worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    deferred = corral.defer(store, task.id, until=7200, token=claim.token, reason="usage limit")
    assert (TaskStatus.READY, 0, None, None) == (
        deferred.status,
        deferred.attempts,
        deferred.worker_id,
        deferred.token,
    )
    assert store.now() + timedelta(hours=2) == deferred.run_after
    assert deferred == store.tasks.get_task(task.id)


def test_defer_until_an_instant_sets_run_after_to_it(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """An aware datetime is used as the exact instant the task becomes claimable."""
    task, w = add(), worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    when = datetime(2030, 1, 2, 9, 30, tzinfo=UTC)
    assert when == corral.defer(store, task.id, until=when, token=claim.token).run_after


def test_a_deferred_task_is_claimable_only_once_its_time_comes(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """claim_next skips the task until run_after, then claims it under a newer token."""
    task, w = add(), worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    corral.defer(store, task.id, until=600, token=claim.token)
    clock.advance(599)
    assert corral.claim_next(store, w.id, settings=settings) is None
    clock.advance(1)
    again = corral.claim_next(store, w.id, settings=settings)
    assert again is not None
    assert (task.id, 1) == (again.task_id, store.tasks.get_task(task.id).attempts)
    assert again.token > claim.token


def test_defer_does_not_use_up_attempts(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A task with one attempt can be deferred again and again and still run."""
    task, w = add(max_attempts=1), worker()
    for _ in range(3):
        claim = corral.claim(store, task.id, w.id, settings=settings)
        corral.defer(store, task.id, until=60, token=claim.token)
        clock.advance(60)
    claim = corral.claim(store, task.id, w.id, settings=settings)
    assert TaskStatus.DONE == corral.complete(store, task.id, token=claim.token).status


def test_defer_ends_the_claim_and_frees_the_worker(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """The claim ends, its token goes stale, and the worker is idle with no done or failed."""
    task, w = add(), worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    corral.defer(store, task.id, until=60, token=claim.token)
    assert store.claims.active_claim(task.id) is None
    after = store.workers.get_worker(w.id)
    assert (WorkerStatus.IDLE, 0, 0, 0) == (
        after.status,
        after.active,
        after.completed_total,
        after.failed_total,
    )
    with pytest.raises(StaleToken):
        corral.complete(store, task.id, token=claim.token)


def test_defer_records_the_reason_and_the_new_run_after(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Event task.deferred says who, why, running -> ready, and until when."""
    task, w = add(), worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    deferred = corral.defer(store, task.id, until=120, token=claim.token, reason="rate limited")
    event = store.events.list_events(EventFilter(task_id=task.id, limit=100))[-1]
    assert ("task.deferred", w.id, claim.token, "running", "ready") == (
        event.name,
        event.worker_id,
        event.token,
        event.from_status,
        event.to_status,
    )
    assert ("rate limited", f"token:{claim.token}") == (event.reason, event.actor)
    assert {"run_after": deferred.run_after.isoformat()} == event.data


def test_defer_under_a_stale_token_changes_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names
) -> None:
    """After a release and a new claim, the old token cannot defer the task."""
    task, w = add(), worker()
    old = corral.claim(store, task.id, w.id, settings=settings)
    corral.release(store, task.id, token=old.token)
    new = corral.claim(store, task.id, w.id, settings=settings)
    before, seen = store.tasks.get_task(task.id), events()
    with pytest.raises(StaleToken, match=f"now held under token {new.token}"):
        corral.defer(store, task.id, until=60, token=old.token)
    assert before == store.tasks.get_task(task.id)
    assert seen == events()


def test_an_operator_defers_whatever_claim_is_active(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Without a token, defer applies to the active claim, as the operator's other commands do."""
    task, w = add(), worker()
    corral.claim(store, task.id, w.id, settings=settings)
    assert TaskStatus.READY == corral.defer(store, task.id, until=60).status


@pytest.mark.parametrize("status", ["ready", "done"])
def test_defer_of_a_task_that_is_not_running_is_refused_naming_its_state(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, status: str
) -> None:
    """Only a running task can be deferred; the refusal names the current state."""
    task, w = add(), worker()
    if status == "done":
        claim = corral.claim(store, task.id, w.id, settings=settings)
        corral.complete(store, task.id, token=claim.token)
    with pytest.raises(InvalidTransition, match=f"cannot defer task {task.id}: it is {status}"):
        corral.defer(store, task.id, until=60)


@pytest.mark.parametrize(
    "until",
    [-1.0, float("nan"), 101 * 365 * 86400.0, datetime(2030, 1, 1)],  # noqa: DTZ001 - naive on purpose
)
def test_defer_refuses_a_bad_until_and_changes_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, until: float | datetime
) -> None:
    """A negative, NaN or too long delay, or a naive datetime, is invalid input."""
    task, w = add(), worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    before = store.tasks.get_task(task.id)
    with pytest.raises(InvalidInput, match="until"):
        corral.defer(store, task.id, until=until, token=claim.token)
    assert before == store.tasks.get_task(task.id)


def test_the_store_needs_exactly_one_of_delay_and_instant(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """The exchange refuses a deferral with both or neither of delay_s and run_at."""
    task, w = add(), worker()
    corral.claim(store, task.id, w.id, settings=settings)
    for delay_s, run_at in ((None, None), (60.0, store.now())):
        report = Report(
            task_id=task.id,
            token=None,
            action=Action.DEFER,
            actor="t",
            delay_s=delay_s,
            run_at=run_at,
        )
        with pytest.raises(InvalidInput, match="until"):
            store.claims.exchange(None, reports=[report])
    assert TaskStatus.RUNNING == store.tasks.get_task(task.id).status
