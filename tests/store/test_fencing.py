"""Conformance: fencing tokens on renew, release, complete and fail; bounded renewals."""

# PLR0917: pytest passes fixtures as parameters.
# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import timedelta

import pytest

import corral
from corral import (
    Claim,
    FakeClock,
    InvalidTransition,
    LimitReached,
    Settings,
    StaleToken,
    Store,
    Task,
    TaskStatus,
    Worker,
)

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
Names = Callable[..., list[str]]

# Each action a claim holder reports, called with a token (None: as an operator).
ACTIONS: dict[str, Callable[[Store, str, int | None, Settings], object]] = {
    "renew": lambda store, task_id, token, settings: corral.renew(
        store, task_id, token=token, settings=settings
    ),
    "release": lambda store, task_id, token, settings: corral.release(store, task_id, token=token),
    "complete": lambda store, task_id, token, settings: corral.complete(
        store, task_id, token=token, result="late"
    ),
    "fail": lambda store, task_id, token, settings: corral.fail(
        store, task_id, error="late", token=token, settings=settings
    ),
}


def _assert_refused_and_unchanged(
    store: Store, settings: Settings, task_id: str, token: int, action: str, events: Names
) -> None:
    """`action` under `token` raises StaleToken; task, claim, workers and events are unchanged."""
    before, seen = store.tasks.get_task(task_id), events()
    claim_before, workers_before = store.claims.active_claim(task_id), store.workers.list_workers()
    with pytest.raises(StaleToken, match=f"token {token} is stale") as caught:
        ACTIONS[action](store, task_id, token, settings)
    assert 1 == caught.value.exit_code
    assert before == store.tasks.get_task(task_id)
    assert claim_before == store.claims.active_claim(task_id)
    assert workers_before == store.workers.list_workers()
    assert seen == events()


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_a_stale_token_after_a_reclaim_changes_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names, action: str
) -> None:
    """Once a task is released and claimed again, the old token is refused and nothing changes."""
    task = add()
    w = worker()
    old = corral.claim(store, task.id, w.id, settings=settings)
    corral.release(store, task.id, token=old.token)
    new = corral.claim(store, task.id, w.id, settings=settings)
    assert new.token > old.token
    _assert_refused_and_unchanged(store, settings, task.id, old.token, action, events)


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_a_token_that_never_held_the_task_is_stale(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names, action: str
) -> None:
    """A token of another task's claim is refused on this task, which stays as it was."""
    task, other = add("task"), add("other")
    w = worker(max_concurrent=2)
    corral.claim(store, task.id, w.id, settings=settings)
    foreign = corral.claim(store, other.id, w.id, settings=settings)
    _assert_refused_and_unchanged(store, settings, task.id, foreign.token, action, events)


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_a_stale_token_after_the_reconciler_expired_the_claim_and_another_worker_reclaimed(
    store: Store,
    clock: FakeClock,
    settings: Settings,
    add: Add,
    worker: MakeWorker,
    events: Names,
    action: str,
) -> None:
    """A dead worker's token stays refused after recovery hands the task to another worker."""
    task = add()
    lost = worker("lost")
    old = corral.claim(store, task.id, lost.id, settings=settings)
    clock.advance(settings.heartbeat_interval_s * (settings.dead_after_missed + 1))
    survivor = worker("survivor")
    report = corral.reconcile_once(store, settings=settings)
    assert (1, 1) == (report.workers_dead, report.claims_expired)
    _assert_refused_and_unchanged(store, settings, task.id, old.token, action, events)
    clock.advance(settings.retry_max_s)
    corral.heartbeat(store, survivor.id, settings=settings)
    new = corral.claim(store, task.id, survivor.id, settings=settings)
    assert new.token > old.token
    _assert_refused_and_unchanged(store, settings, task.id, old.token, action, events)


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_a_token_of_a_cancelled_task_is_stale(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names, action: str
) -> None:
    """Cancelling a running task makes its holder's token stale."""
    task = add()
    claim = corral.claim(store, task.id, worker().id, settings=settings)
    corral.cancel(store, task.id, reason="not needed")
    _assert_refused_and_unchanged(store, settings, task.id, claim.token, action, events)


OUTCOMES = [
    ("renew", TaskStatus.RUNNING),
    ("release", TaskStatus.READY),
    ("complete", TaskStatus.DONE),
    ("fail", TaskStatus.READY),
]


@pytest.mark.parametrize(("action", "status"), OUTCOMES)
def test_the_current_token_is_accepted(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, action: str, status: TaskStatus
) -> None:
    """The holder's own token works for every action, recorded under that token."""
    task = add()
    claim = corral.claim(store, task.id, worker().id, settings=settings)
    ACTIONS[action](store, task.id, claim.token, settings)
    assert status == store.tasks.get_task(task.id).status
    [last] = store.events.list_events(corral.EventFilter(task_id=task.id, limit=1))
    assert (claim.token, f"token:{claim.token}") == (last.token, last.actor)


@pytest.mark.parametrize(("action", "status"), OUTCOMES)
def test_without_a_token_the_caller_acts_as_an_operator(
    store: Store,
    settings: Settings,
    add: Add,
    worker: MakeWorker,
    events: Names,
    action: str,
    status: TaskStatus,
) -> None:
    """With no token the action applies to whatever claim is active, recorded as the operator."""
    task = add()
    corral.claim(store, task.id, worker().id, settings=settings)
    ACTIONS[action](store, task.id, None, settings)
    assert status == store.tasks.get_task(task.id).status
    [last] = store.events.list_events(corral.EventFilter(task_id=task.id, limit=1))
    assert "operator" == last.actor


@pytest.mark.parametrize("action", sorted(ACTIONS))
def test_an_operator_action_on_an_unclaimed_task_names_its_state(
    store: Store, settings: Settings, add: Add, action: str
) -> None:
    """Without a token on a task nobody holds, the refusal is InvalidTransition naming the state."""
    task = add()
    with pytest.raises(InvalidTransition, match="it is ready"):
        ACTIONS[action](store, task.id, None, settings)
    assert task == store.tasks.get_task(task.id)


def test_renew_extends_the_lease_from_now(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """renew sets the lease to now + lease_s and counts the renewal."""
    task = add()
    claim = corral.claim(store, task.id, worker().id, settings=settings)
    clock.advance(20)
    renewed = corral.renew(store, task.id, token=claim.token, lease_s=100, settings=settings)
    assert (claim.token, 1) == (renewed.token, renewed.renewals)
    assert store.now() + timedelta(seconds=100) == renewed.lease_expires_at
    assert renewed == store.claims.active_claim(task.id)


def test_renew_never_passes_the_task_deadline(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A renewal on a task with a timeout stops at claimed_at + timeout."""
    task = add(timeout_s=50)
    claim = corral.claim(store, task.id, worker().id, lease_s=10, settings=settings)
    clock.advance(30)
    renewed = corral.renew(store, task.id, token=claim.token, lease_s=60, settings=settings)
    assert claim.deadline_at == renewed.lease_expires_at
    assert claim.claimed_at + timedelta(seconds=50) == renewed.lease_expires_at


def test_renewals_are_bounded_by_max_renewals(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Past max_renewals a renewal raises LimitReached (exit 1) and leaves the claim as it was."""
    bounded = dataclasses.replace(settings, max_renewals=2)
    task = add()
    claim = corral.claim(store, task.id, worker().id, settings=bounded)
    for _ in range(2):
        corral.renew(store, task.id, token=claim.token, settings=bounded)
    before = store.claims.active_claim(task.id)
    assert before is not None
    assert 2 == before.renewals
    with pytest.raises(LimitReached, match="max_renewals=2") as caught:
        corral.renew(store, task.id, token=claim.token, settings=bounded)
    assert 1 == caught.value.exit_code
    assert before == store.claims.active_claim(task.id)


def test_renew_by_worker_id_checks_the_holder(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """renew naming a worker other than the holder is refused."""
    task = add()
    holder, other = worker("holder"), worker("other")
    corral.claim(store, task.id, holder.id, settings=settings)
    with pytest.raises(corral.Refused, match="not " + other.id):
        corral.renew(store, task.id, worker_id=other.id, settings=settings)
    renewed: Claim = corral.renew(store, task.id, worker_id=holder.id, settings=settings)
    assert 1 == renewed.renewals


def test_tokens_only_grow(store: Store, settings: Settings, add: Add, worker: MakeWorker) -> None:
    """Every new claim carries a larger token than any claim before it."""
    w = worker()
    tokens = []
    for i in range(4):
        claim = corral.claim(store, add(f"t{i}").id, w.id, settings=settings)
        tokens.append(claim.token)
        corral.complete(store, claim.task_id, token=claim.token)
    assert sorted(set(tokens)) == tokens
