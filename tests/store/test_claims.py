"""Conformance: claims, the capability, queue and assignee filters, capacity, drain, release."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

import corral
from corral import (
    ClaimStatus,
    FakeClock,
    NotFound,
    Refused,
    Settings,
    Store,
    Task,
    TaskStatus,
    Worker,
    WorkerStatus,
    WorkerUnavailable,
)
from corral.usecases import reviews

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]


def test_claim_opens_a_lease_and_marks_task_running_and_worker_busy(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A claim runs the task, counts the attempt, and makes the worker busy."""
    task = add()
    w = worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    assert (task.id, w.id, ClaimStatus.ACTIVE, 0) == (
        claim.task_id,
        claim.worker_id,
        claim.status,
        claim.renewals,
    )
    assert store.now() + timedelta(seconds=settings.lease_s) == claim.lease_expires_at
    running = store.tasks.get_task(task.id)
    assert (TaskStatus.RUNNING, 1, w.id, claim.token) == (
        running.status,
        running.attempts,
        running.worker_id,
        running.token,
    )
    assert WorkerStatus.BUSY == store.workers.get_worker(w.id).status
    assert claim == store.claims.active_claim(task.id)


def test_claim_takes_an_explicit_lease_length(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """`lease_s` given to claim overrides the settings' lease."""
    claim = corral.claim(store, add().id, worker().id, lease_s=90, settings=settings)
    assert store.now() + timedelta(seconds=90) == claim.lease_expires_at


def test_a_second_claim_on_a_running_task_is_refused(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """One active claim per task: another worker's claim is Refused (exit 1) naming the holder."""
    task = add()
    first, second = worker("first"), worker("second")
    claim = corral.claim(store, task.id, first.id, settings=settings)
    with pytest.raises(Refused, match=f"it is running \\(held by worker {first.id}\\)") as caught:
        corral.claim(store, task.id, second.id, settings=settings)
    assert 1 == caught.value.exit_code
    assert claim == store.claims.active_claim(task.id)
    assert 1 == store.tasks.get_task(task.id).attempts
    assert WorkerStatus.IDLE == store.workers.get_worker(second.id).status


def test_the_same_worker_cannot_claim_a_task_twice(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Claiming a task the worker already holds is refused, not a second lease."""
    task = add()
    w = worker(max_concurrent=2)
    corral.claim(store, task.id, w.id, settings=settings)
    with pytest.raises(Refused, match="it is running"):
        corral.claim(store, task.id, w.id, settings=settings)
    assert 1 == store.workers.get_worker(w.id).active


def test_claiming_unknown_task_or_worker_is_not_found(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Unknown ids are NotFound, for the task and for the worker."""
    w = worker()
    with pytest.raises(NotFound, match="t-missing"):
        corral.claim(store, "t-missing", w.id, settings=settings)
    with pytest.raises(NotFound, match="w-missing"):
        corral.claim(store, add().id, "w-missing", settings=settings)


def test_claim_next_only_hands_out_declared_kinds(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A worker never receives a task of a kind it did not declare, even at higher priority."""
    add("review", kind="review", priority=9)
    code = add("code", kind="code")
    w = worker(kinds=("code",), max_concurrent=5)
    claim = corral.claim_next(store, w.id, settings=settings)
    assert claim is not None
    assert code.id == claim.task_id
    assert None is corral.claim_next(store, w.id, settings=settings)


def test_claim_next_narrows_kinds_to_those_declared(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Asking for kinds narrows within the worker's declared kinds and never widens them."""
    add("review", kind="review")
    code = add("code", kind="code")
    w = worker(kinds=("code",), max_concurrent=5)
    assert None is corral.claim_next(store, w.id, kinds=("review",), settings=settings)
    claim = corral.claim_next(store, w.id, kinds=("code", "review"), settings=settings)
    assert claim is not None
    assert code.id == claim.task_id


def test_a_worker_without_declared_kinds_runs_any_kind_it_asks_for(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """No declared kinds means any kind; kinds asked at claim time then filter."""
    add("code", kind="code")
    review = add("review", kind="review")
    w = worker(max_concurrent=5)
    claim = corral.claim_next(store, w.id, kinds=("review",), settings=settings)
    assert claim is not None
    assert review.id == claim.task_id


def test_claim_refuses_a_kind_the_worker_does_not_run(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Claiming a named task of another kind is refused and leaves the task ready."""
    task = add(kind="review")
    w = worker(kinds=("code",))
    with pytest.raises(Refused, match="does not run kind 'review'"):
        corral.claim(store, task.id, w.id, settings=settings)
    assert TaskStatus.READY == store.tasks.get_task(task.id).status
    assert 0 == store.tasks.get_task(task.id).attempts


def test_claim_and_claim_next_respect_the_worker_queues(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A worker serving some queues never receives a task from another queue."""
    other = add("other", queue="other", priority=9)
    mine = add("mine", queue="mine")
    w = worker(queues=("mine",), max_concurrent=5)
    with pytest.raises(Refused, match="does not serve queue 'other'"):
        corral.claim(store, other.id, w.id, settings=settings)
    claim = corral.claim_next(store, w.id, settings=settings)
    assert claim is not None
    assert mine.id == claim.task_id
    assert None is corral.claim_next(store, w.id, settings=settings)


def test_claim_next_queue_argument_filters(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """claim_next(queues=...) picks only from those queues."""
    add("a", queue="a", priority=9)
    b = add("b", queue="b")
    w = worker()
    claim = corral.claim_next(store, w.id, queues=("b",), settings=settings)
    assert claim is not None
    assert b.id == claim.task_id


@pytest.mark.parametrize("by", ["id", "name"])
def test_an_assigned_task_goes_only_to_its_assignee(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, by: str
) -> None:
    """A task assigned by worker id or name is never claimed by another worker."""
    mine = worker("mine")
    other = worker("other")
    task = add(assignee=mine.id if by == "id" else mine.name)
    assert None is corral.claim_next(store, other.id, settings=settings)
    with pytest.raises(Refused, match="is assigned to"):
        corral.claim(store, task.id, other.id, settings=settings)
    claim = corral.claim_next(store, mine.id, settings=settings)
    assert claim is not None
    assert task.id == claim.task_id


def test_max_concurrent_bounds_the_claims_of_a_worker(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A worker at max_concurrent gets WorkerUnavailable from claim and claim_next."""
    tasks = [add(f"t{i}") for i in range(3)]
    w = worker(max_concurrent=2)
    assert corral.claim_next(store, w.id, settings=settings) is not None
    assert corral.claim_next(store, w.id, settings=settings) is not None
    with pytest.raises(WorkerUnavailable, match="at capacity \\(2 of 2"):
        corral.claim_next(store, w.id, settings=settings)
    with pytest.raises(WorkerUnavailable, match="at capacity"):
        corral.claim(store, tasks[2].id, w.id, settings=settings)
    assert TaskStatus.READY == store.tasks.get_task(tasks[2].id).status


def test_a_draining_worker_gets_no_claims(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """After drain, claim and claim_next refuse with WorkerUnavailable and the task stays ready."""
    task = add()
    w = worker()
    drained = corral.drain(store, w.id)
    assert WorkerStatus.DRAINING == drained.status
    with pytest.raises(WorkerUnavailable, match="draining"):
        corral.claim_next(store, w.id, settings=settings)
    with pytest.raises(WorkerUnavailable, match="draining"):
        corral.claim(store, task.id, w.id, settings=settings)
    assert TaskStatus.READY == store.tasks.get_task(task.id).status


def test_a_draining_worker_finishes_what_it_holds(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Draining keeps the worker's active claim usable until it completes."""
    task = add()
    w = worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    corral.drain(store, w.id)
    assert TaskStatus.DONE == corral.complete(store, task.id, token=claim.token).status
    assert WorkerStatus.DRAINING == store.workers.get_worker(w.id).status


def test_a_starting_worker_may_claim_before_its_first_heartbeat(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A just-registered worker can claim at once (the bash loop heartbeats after registering)."""
    task = add()
    w = worker(beat=False)
    assert WorkerStatus.STARTING == w.status
    claim = corral.claim(store, task.id, w.id, settings=settings)
    assert task.id == claim.task_id


def test_release_returns_the_task_without_counting_the_attempt(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Release puts the task back to ready at once, attempts as before the claim, worker idle."""
    task = add()
    w = worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    released = corral.release(store, task.id, worker_id=w.id, token=claim.token, reason="later")
    assert (TaskStatus.READY, 0, None, None) == (
        released.status,
        released.attempts,
        released.worker_id,
        released.token,
    )
    assert None is store.claims.active_claim(task.id)
    assert WorkerStatus.IDLE == store.workers.get_worker(w.id).status
    again = corral.claim_next(store, w.id, settings=settings)
    assert again is not None
    assert claim.token < again.token


@pytest.mark.parametrize("attempt", [False, True])
def test_release_by_another_worker_is_refused(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, attempt: bool
) -> None:
    """A worker cannot release a task held by a different worker, counted or not."""
    task = add()
    holder, other = worker("holder"), worker("other")
    corral.claim(store, task.id, holder.id, settings=settings)
    before = store.tasks.get_task(task.id)
    with pytest.raises(Refused, match=f"held by worker {holder.id}, not {other.id}"):
        corral.release(store, task.id, worker_id=other.id, attempt=attempt)
    assert before == store.tasks.get_task(task.id)


@pytest.mark.parametrize("attempt", [False, True])
def test_a_release_of_a_task_its_agent_finished_is_a_no_op(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, attempt: bool
) -> None:
    """The agent ran `done` (or `submit`): the holder's release after it changes nothing,
    named by worker or by the token that finished it; another claim's token is refused."""
    done, submitted = add(), add()
    w = worker()
    first = corral.claim(store, done.id, w.id, settings=settings)
    corral.complete(store, done.id, token=first.token)
    second = corral.claim(store, submitted.id, w.id, settings=settings)
    reviews.submit(store, submitted.id, token=second.token)
    after = {t: store.tasks.get_task(t) for t in (done.id, submitted.id)}
    by_worker = corral.release(store, done.id, worker_id=w.id, attempt=attempt)
    by_token = corral.release(store, submitted.id, token=second.token, attempt=attempt)
    assert [after[done.id], after[submitted.id]] == [by_worker, by_token]
    with pytest.raises(Refused, match="stale"):
        corral.release(store, done.id, token=second.token, attempt=attempt)
    assert after == {t: store.tasks.get_task(t) for t in after}


def test_claim_by_token_finds_a_claim_in_any_state(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """The claim a token names, active or ended; None for a token never given."""
    task = add()
    claim = corral.claim(store, task.id, worker().id, settings=settings)
    corral.complete(store, task.id, token=claim.token)
    found = store.claims.claim_by_token(claim.token)
    assert (task.id, ClaimStatus.COMPLETED) == (found.task_id, found.status)
    assert None is store.claims.claim_by_token(claim.token + 1000)


def test_a_release_that_counts_the_attempt_is_decided_by_the_retry_policy(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, clock: FakeClock
) -> None:
    """`attempt=True`: the attempt stays counted, the task is ready after the backoff, and
    at max_attempts it fails, with the reason in its last error."""
    task = add(max_attempts=2)
    w = worker()
    first = corral.claim(store, task.id, w.id, settings=settings)
    retried = corral.release(
        store, task.id, worker_id=w.id, token=first.token, attempt=True, settings=settings
    )
    assert (TaskStatus.READY, 1, "released without finishing") == (
        retried.status,
        retried.attempts,
        retried.last_error,
    )
    assert store.now() + timedelta(seconds=settings.retry_base_s) == retried.run_after
    assert WorkerStatus.IDLE == store.workers.get_worker(w.id).status
    clock.advance(settings.retry_base_s)
    second = corral.claim(store, task.id, w.id, settings=settings)
    failed = corral.release(
        store, task.id, worker_id=w.id, token=second.token, reason="gave up", attempt=True
    )
    assert (TaskStatus.FAILED, 2, "released without finishing: gave up") == (
        failed.status,
        failed.attempts,
        failed.last_error,
    )


def test_complete_marks_done_and_counts_on_the_worker(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """complete stores the result, finishes the task, ends the claim and idles the worker."""
    task = add()
    w = worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    done = corral.complete(store, task.id, token=claim.token, result={"ok": True})
    assert (TaskStatus.DONE, {"ok": True}, store.now()) == (
        done.status,
        done.result,
        done.finished_at,
    )
    assert None is store.claims.active_claim(task.id)
    after = store.workers.get_worker(w.id)
    assert (WorkerStatus.IDLE, 1, 0, 0) == (
        after.status,
        after.completed_total,
        after.failed_total,
        after.active,
    )


@pytest.mark.parametrize("requires_review", [False, True])
def test_complete_returns_the_task_as_it_is_read_afterwards(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, requires_review: bool
) -> None:
    """What complete returns is the stored task, field for field (its dependencies, no claim):
    the exchange returns the row it wrote instead of reading it again."""
    first, second = add("first"), add("second")
    task = add("last", depends_on=(first.id, second.id), requires_review=requires_review)
    w = worker()
    for dependency in (first, second):
        claim = corral.claim(store, dependency.id, w.id, settings=settings)
        corral.complete(store, dependency.id, token=claim.token)
    claim = corral.claim(store, task.id, w.id, settings=settings)
    returned = corral.complete(store, task.id, token=claim.token, result=[1, "two"])
    assert store.tasks.get_task(task.id) == returned
    assert (tuple(sorted((first.id, second.id))), None, None) == (
        tuple(sorted(returned.depends_on)),
        returned.token,
        returned.worker_id,
    )


def test_a_review_task_completes_into_in_review(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """complete on a task that requires review leaves it in_review, not done, and unfinished."""
    task = add(requires_review=True)
    dependent = add("after review", depends_on=(task.id,))
    claim = corral.claim(store, task.id, worker().id, settings=settings)
    reviewed = corral.complete(store, task.id, token=claim.token)
    assert TaskStatus.IN_REVIEW == reviewed.status
    assert None is reviewed.finished_at
    assert TaskStatus.BLOCKED == store.tasks.get_task(dependent.id).status


def test_deregister_returns_held_tasks_to_ready_without_counting_attempts(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Deregistering takes a worker offline and readies each task it held, attempts uncounted."""
    first, second = add("first"), add("second")
    w = worker(max_concurrent=2)
    corral.claim(store, first.id, w.id, settings=settings)
    corral.claim(store, second.id, w.id, settings=settings)
    gone = corral.deregister(store, w.id, reason="shutting down")
    assert (WorkerStatus.OFFLINE, "shutting down", 0) == (
        gone.status,
        gone.offline_reason,
        gone.active,
    )
    for task_id in (first.id, second.id):
        task = store.tasks.get_task(task_id)
        assert (TaskStatus.READY, 0, None) == (task.status, task.attempts, task.worker_id)
    with pytest.raises(WorkerUnavailable, match="offline"):
        corral.claim_next(store, w.id, settings=settings)


def test_deregistering_twice_is_refused(store: Store, worker: MakeWorker) -> None:
    """An offline worker cannot be deregistered again."""
    w = worker()
    corral.deregister(store, w.id)
    with pytest.raises(WorkerUnavailable, match="already offline"):
        corral.deregister(store, w.id)


def test_claims_of_several_workers_never_share_a_task(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Interleaved claim_next calls from many workers hand each task out exactly once."""
    ids = {add(f"t{i}").id for i in range(12)}
    workers = [worker(f"w{i}", max_concurrent=4) for i in range(3)]
    claimed = []
    for _ in range(4):
        for w in workers:
            claim = corral.claim_next(store, w.id, settings=settings)
            assert claim is not None
            claimed.append(claim.task_id)
    assert ids == set(claimed)
    assert len(ids) == len(claimed)


def test_claim_ends_at_the_task_timeout(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A claim on a task with a timeout shorter than the lease expires at the deadline."""
    task = add(timeout_s=30)
    claim = corral.claim(store, task.id, worker().id, settings=settings)
    assert store.now() + timedelta(seconds=30) == claim.lease_expires_at
    assert claim.lease_expires_at == claim.deadline_at
