"""Conformance: the worker registry: register, heartbeat, drain, deregister, and leases."""

# PLR0917: pytest passes fixtures as parameters.
# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

import corral
from corral import (
    FakeClock,
    NewWorker,
    NotFound,
    Settings,
    Store,
    Task,
    Worker,
    WorkerStatus,
    WorkerUnavailable,
)
from corral.model.workers import BeatFigures

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
Names = Callable[..., list[str]]


def test_register_answers_the_worker_starting_and_the_interval(
    store: Store, settings: Settings
) -> None:
    """A new worker is starting, carries what it declared, and learns the heartbeat interval."""
    spec = NewWorker(
        name="agent-1",
        hostname="box",
        pid=99,
        kinds=("code", "review"),
        queues=("q",),
        max_concurrent=2,
        labels={"gpu": "no"},
    )
    beat = corral.register(store, spec, settings=settings)
    w = beat.worker
    assert (WorkerStatus.STARTING, "agent-1", "box", 99, ("code", "review"), ("q",), 2) == (
        w.status,
        w.name,
        w.hostname,
        w.pid,
        w.kinds,
        w.queues,
        w.max_concurrent,
    )
    assert {"gpu": "no"} == w.labels
    assert (settings.heartbeat_interval_s, False) == (beat.heartbeat_interval_s, beat.drain)
    assert store.now() == w.registered_at == w.last_heartbeat_at
    assert w == store.workers.get_worker(w.id)


def test_register_records_the_hashes_of_the_process_keys(store: Store) -> None:
    """The hashes a worker registers with are read back with it (what proves its processes
    before a signal), and neither is in its JSON shape; none given reads as None."""
    keyed = NewWorker(name="keyed", key_hash="a" * 64, runs_key_hash="b" * 64)
    worker = corral.register(store, keyed).worker
    read = store.workers.get_worker(worker.id)
    plain = corral.register(store, NewWorker(name="plain")).worker
    assert ("a" * 64, "b" * 64) == (read.key_hash, read.runs_key_hash)
    assert (None, None) == (plain.key_hash, plain.runs_key_hash)
    assert not {"key_hash", "runs_key_hash"} & set(read.to_dict())


@pytest.mark.parametrize("field", ["key_hash", "runs_key_hash"])
@pytest.mark.parametrize("value", ["", "A" * 64, "a" * 63, "g" * 64])
def test_a_key_hash_that_is_no_sha256_in_hex_is_refused(field: str, value: str) -> None:
    """A hash is 64 lowercase hex digits: anything else is InvalidInput naming the field."""
    with pytest.raises(corral.InvalidInput, match=f"^{field}: expected a SHA-256 of 64"):
        NewWorker(name="w", **{field: value})


def test_two_registrations_with_one_name_are_two_workers(store: Store, worker: MakeWorker) -> None:
    """Names need not be unique: each registration is its own worker id."""
    assert worker("same").id != worker("same").id


def test_the_first_heartbeat_makes_a_worker_idle(
    store: Store, clock: FakeClock, settings: Settings, worker: MakeWorker, events: Names
) -> None:
    """A starting worker becomes idle at its first heartbeat, recorded as worker.started."""
    w = worker(beat=False)
    clock.advance(0.5)
    figures = BeatFigures(cpu_percent=12.5, rss_bytes=1024)
    beat = corral.heartbeat(store, w.id, figures=figures, settings=settings)
    assert (WorkerStatus.IDLE, store.now(), 12.5, 1024) == (
        beat.worker.status,
        beat.worker.last_heartbeat_at,
        beat.worker.cpu_percent,
        beat.worker.rss_bytes,
    )
    assert ["worker.registered", "worker.started"] == events(worker_id=w.id)


def test_heartbeat_answers_the_interval_and_whether_to_drain(
    store: Store, settings: Settings, worker: MakeWorker
) -> None:
    """The heartbeat tells the worker how often to beat and, once drained, to drain."""
    w = worker()
    beat = corral.heartbeat(store, w.id, settings=settings)
    assert (settings.heartbeat_interval_s, False) == (beat.heartbeat_interval_s, beat.drain)
    corral.drain(store, w.id)
    beat = corral.heartbeat(store, w.id, settings=settings)
    assert (WorkerStatus.DRAINING, True) == (beat.worker.status, beat.drain)
    assert {"id": w.id, "status": "draining", "heartbeat_interval_s": 1.0, "drain": True} == (
        beat.to_dict()
    )


def test_heartbeat_of_a_busy_worker_keeps_it_busy(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """idle and busy follow the worker's active claims across heartbeats."""
    w = worker()
    claim = corral.claim(store, add().id, w.id, settings=settings)
    assert WorkerStatus.BUSY == corral.heartbeat(store, w.id, settings=settings).worker.status
    corral.complete(store, claim.task_id, token=claim.token)
    assert WorkerStatus.IDLE == corral.heartbeat(store, w.id, settings=settings).worker.status


def test_heartbeat_extends_active_leases(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Each heartbeat pushes the worker's active leases to now + their lease length."""
    w = worker(max_concurrent=2)
    first = corral.claim(store, add("a").id, w.id, lease_s=10, settings=settings)
    second = corral.claim(store, add("b").id, w.id, lease_s=20, settings=settings)
    clock.advance(5)
    corral.heartbeat(store, w.id, settings=settings)
    for claim, lease_s in ((first, 10), (second, 20)):
        held = store.claims.active_claim(claim.task_id)
        assert held is not None
        assert store.now() + timedelta(seconds=lease_s) == held.lease_expires_at
        assert 0 == held.renewals


def test_heartbeat_never_extends_a_lease_past_the_task_deadline(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Leases stop at claimed_at + the task timeout, however often the worker heartbeats."""
    w = worker()
    claim = corral.claim(store, add(timeout_s=12).id, w.id, lease_s=10, settings=settings)
    assert claim.claimed_at + timedelta(seconds=10) == claim.lease_expires_at
    for _ in range(20):
        clock.advance(1)
        corral.heartbeat(store, w.id, settings=settings)
    held = store.claims.active_claim(claim.task_id)
    assert held is not None
    assert claim.claimed_at + timedelta(seconds=12) == held.lease_expires_at
    assert held.deadline_at == held.lease_expires_at


def test_heartbeat_extends_by_the_lease_length_of_the_last_renewal(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A renewal with a longer lease_s sets the length later heartbeats extend by."""
    w = worker()
    task = add()
    corral.claim(store, task.id, w.id, lease_s=10, settings=settings)
    renewed = corral.renew(store, task.id, worker_id=w.id, lease_s=500, settings=settings)
    clock.advance(1)
    corral.heartbeat(store, w.id, settings=settings)
    held = store.claims.active_claim(task.id)
    assert held is not None
    assert renewed.lease_expires_at + timedelta(seconds=1) == held.lease_expires_at


def test_a_stale_worker_that_heartbeats_recovers(
    store: Store,
    settings: Settings,
    add: Add,
    worker: MakeWorker,
    events: Names,
    silence: Callable[[int], None],
) -> None:
    """A worker marked stale returns to busy at its next heartbeat, recorded as worker.recovered."""
    w = worker()
    corral.claim(store, add().id, w.id, settings=settings)
    silence(1)
    assert 1 == corral.reconcile_once(store, settings=settings).workers_stale
    assert WorkerStatus.STALE == store.workers.get_worker(w.id).status
    beat = corral.heartbeat(store, w.id, settings=settings)
    assert WorkerStatus.BUSY == beat.worker.status
    assert ["worker.stale", "worker.recovered"] == [
        name for name in events(worker_id=w.id) if name in ("worker.stale", "worker.recovered")
    ]


def test_a_draining_worker_keeps_draining_through_a_silence(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, silence: Callable[[int], None]
) -> None:
    """A draining worker that misses heartbeats but returns is still told to drain."""
    add()
    w = worker()
    corral.drain(store, w.id)
    silence(settings.dead_after_missed - 1)
    assert 0 == corral.reconcile_once(store, settings=settings).total
    beat = corral.heartbeat(store, w.id, settings=settings)
    assert (WorkerStatus.DRAINING, True) == (beat.worker.status, beat.drain)
    with pytest.raises(WorkerUnavailable, match="draining"):
        corral.claim_next(store, w.id, settings=settings)


def test_a_stale_worker_takes_no_new_claims(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, silence: Callable[[int], None]
) -> None:
    """Until it heartbeats again, a stale worker is refused new claims."""
    add()
    w = worker()
    silence(1)
    corral.reconcile_once(store, settings=settings)
    with pytest.raises(WorkerUnavailable, match="stale"):
        corral.claim_next(store, w.id, settings=settings)


def test_a_dead_worker_heartbeat_is_refused(
    store: Store, settings: Settings, worker: MakeWorker, silence: Callable[[int], None]
) -> None:
    """A worker the reconciler declared dead must register anew: its heartbeat is refused."""
    w = worker()
    silence(settings.dead_after_missed)
    corral.reconcile_once(store, settings=settings)
    before = store.workers.get_worker(w.id)
    assert WorkerStatus.DEAD == before.status
    with pytest.raises(WorkerUnavailable, match="dead: register a new worker") as caught:
        corral.heartbeat(store, w.id, settings=settings)
    assert 1 == caught.value.exit_code
    assert before == store.workers.get_worker(w.id)


def test_an_offline_worker_heartbeat_is_refused(
    store: Store, settings: Settings, worker: MakeWorker
) -> None:
    """A deregistered worker cannot heartbeat."""
    w = worker()
    corral.deregister(store, w.id)
    with pytest.raises(WorkerUnavailable, match="offline"):
        corral.heartbeat(store, w.id, settings=settings)


def test_heartbeat_of_an_unknown_worker_is_not_found(store: Store, settings: Settings) -> None:
    """An id that names no worker is NotFound."""
    with pytest.raises(NotFound, match="w-missing"):
        corral.heartbeat(store, "w-missing", settings=settings)


def test_drain_is_idempotent_and_refused_for_gone_workers(
    store: Store, worker: MakeWorker, events: Names
) -> None:
    """Draining twice records one event; draining an offline worker is refused."""
    w = worker()
    corral.drain(store, w.id)
    corral.drain(store, w.id)
    assert 1 == events(worker_id=w.id).count("worker.draining")
    corral.deregister(store, w.id)
    with pytest.raises(WorkerUnavailable, match="cannot drain"):
        corral.drain(store, w.id)


def test_deregister_records_worker_offline(store: Store, worker: MakeWorker, events: Names) -> None:
    """Deregistering writes worker.offline with the reason."""
    w = worker()
    corral.deregister(store, w.id, reason="done for today")
    [last] = store.events.list_events(corral.EventFilter(worker_id=w.id, limit=1))
    assert ("worker.offline", "idle", "offline", "done for today") == (
        last.name,
        last.from_status,
        last.to_status,
        last.reason,
    )


def test_deregistered_at_is_when_it_went_offline_and_null_before(
    store: Store, clock: FakeClock, settings: Settings, worker: MakeWorker
) -> None:
    """A worker carries no deregistered_at while registered, dead too (still in the
    registry); deregistering stamps it with the store's time, in its JSON shape as well."""
    w = worker()
    assert None is store.workers.get_worker(w.id).deregistered_at
    clock.advance(3 * settings.dead_after_missed * settings.heartbeat_interval_s)
    corral.reconcile_once(store, settings=settings)
    assert (WorkerStatus.DEAD, None) == _gone(store, w.id)
    clock.advance(5.0)
    at = store.now()
    corral.deregister(store, w.id)
    assert (WorkerStatus.OFFLINE, at) == _gone(store, w.id)
    assert at.isoformat() == store.workers.get_worker(w.id).to_dict()["deregistered_at"]


def _gone(store: Store, worker_id: str) -> tuple[WorkerStatus, object]:
    found = store.workers.get_worker(worker_id)
    return found.status, found.deregistered_at


def test_list_workers_filters_by_status(store: Store, clock: FakeClock, worker: MakeWorker) -> None:
    """list_workers answers registration order, optionally only some statuses."""
    starting = worker("starting", beat=False)
    clock.advance(0.1)
    idle = worker("idle")
    assert [starting.id, idle.id] == [w.id for w in store.workers.list_workers()]
    assert [idle.id] == [w.id for w in store.workers.list_workers((WorkerStatus.IDLE,))]
