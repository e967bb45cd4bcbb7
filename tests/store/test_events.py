"""Conformance: every state change writes an event with a stable name."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest

import corral
from corral import EventFilter, FakeClock, Settings, Store, Task, Worker

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]

STABLE_NAMES = {
    "task.created",
    "task.claimed",
    "task.completed",
    "task.failed",
    "task.retry_scheduled",
    "task.released",
    "task.renewed",
    "task.cancelled",
    "task.retried",
    "task.unblocked",
    "task.crashed",
    "task.lease_expired",
    "worker.registered",
    "worker.started",
    "worker.stale",
    "worker.dead",
    "worker.recovered",
    "worker.draining",
    "worker.offline",
}


class Feed:
    """The events written since the last look, as names."""

    def __init__(self, store: Store) -> None:
        self.store = store
        before = store.events.list_events(EventFilter(limit=1))  # a served store's token.created
        self.last_id = before[-1].id if before else 0
        self.seen: list[str] = []

    def new(self) -> list[str]:
        """Names of events recorded since the previous call, oldest first."""
        found = self.store.events.list_events(EventFilter(after_id=self.last_id, limit=1000))
        if found:
            self.last_id = found[-1].id
        names = [e.name for e in found]
        self.seen += names
        return names


def test_each_state_change_writes_its_named_events(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A scenario through every transition records exactly the expected events at each step."""
    s = dataclasses.replace(settings, max_crashes=1)
    feed = Feed(store)
    parent = add("parent")
    child = add("child", depends_on=(parent.id,), max_attempts=1)
    assert ["task.created", "task.created"] == feed.new()

    w = worker("w", beat=False)
    assert ["worker.registered"] == feed.new()
    corral.heartbeat(store, w.id, settings=s)
    assert ["worker.started"] == feed.new()
    corral.heartbeat(store, w.id, settings=s)
    assert [] == feed.new()

    claim = corral.claim(store, parent.id, w.id, settings=s)
    corral.renew(store, parent.id, token=claim.token, settings=s)
    corral.release(store, parent.id, token=claim.token)
    assert ["task.claimed", "task.renewed", "task.released"] == feed.new()

    claim = corral.claim(store, parent.id, w.id, settings=s)
    corral.fail(store, parent.id, error="flaky", token=claim.token, settings=s)
    assert ["task.claimed", "task.retry_scheduled"] == feed.new()

    clock.advance(s.retry_max_s)
    corral.heartbeat(store, w.id, settings=s)
    claim = corral.claim(store, parent.id, w.id, settings=s)
    corral.complete(store, parent.id, token=claim.token)
    assert ["task.claimed", "task.completed", "task.unblocked"] == feed.new()

    claim = corral.claim(store, child.id, w.id, settings=s)
    corral.fail(store, child.id, error="broken", token=claim.token, settings=s)
    assert ["task.claimed", "task.failed"] == feed.new()
    corral.retry(store, child.id)
    corral.cancel(store, child.id)
    corral.retry(store, child.id)
    assert ["task.retried", "task.cancelled", "task.retried"] == feed.new()

    claim = corral.claim(store, child.id, w.id, lease_s=0.5, settings=s)
    clock.advance(0.9)
    corral.reconcile_once(store, settings=s)
    assert ["task.claimed", "task.lease_expired", "task.failed"] == feed.new()

    clock.advance(1.5 * s.heartbeat_interval_s)
    corral.reconcile_once(store, settings=s)
    assert ["worker.stale"] == feed.new()
    corral.heartbeat(store, w.id, settings=s)
    assert ["worker.recovered"] == feed.new()

    crasher = add("crasher")
    corral.claim(store, crasher.id, w.id, settings=s)
    clock.advance((s.dead_after_missed + 0.5) * s.heartbeat_interval_s)
    corral.reconcile_once(store, settings=s)
    assert ["task.created", "task.claimed", "worker.dead", "task.crashed", "task.failed"] == (
        feed.new()
    )

    other = worker("other")
    corral.drain(store, other.id)
    corral.deregister(store, other.id)
    assert [
        "worker.registered",
        "worker.started",
        "worker.draining",
        "worker.offline",
    ] == feed.new()
    assert STABLE_NAMES == set(feed.seen)


def test_events_carry_who_what_and_the_transition(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """task.claimed names the task, the worker as actor, the token, and ready -> running."""
    task = add()
    w = worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    [event] = store.events.list_events(EventFilter(task_id=task.id, limit=1))
    assert (
        "task.claimed",
        task.id,
        w.id,
        claim.token,
        "ready",
        "running",
        w.id,
        store.now(),
    ) == (
        event.name,
        event.task_id,
        event.worker_id,
        event.token,
        event.from_status,
        event.to_status,
        event.actor,
        event.at,
    )
    assert {"lease_expires_at": claim.lease_expires_at.isoformat()} == event.data


def test_list_events_answers_the_newest_page_oldest_first(store: Store, add: Add) -> None:
    """limit keeps the newest events, returned oldest first; after_id pages forward."""
    tasks = [add(f"t{i}") for i in range(5)]
    page = store.events.list_events(EventFilter(limit=2))
    assert [tasks[3].id, tasks[4].id] == [e.task_id for e in page]
    later = store.events.list_events(EventFilter(after_id=page[0].id, limit=10))
    assert [tasks[4].id] == [e.task_id for e in later]


def test_list_events_filters_by_task_and_worker(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """The task filter returns that task's events; the worker filter includes its claims."""
    task, other = add("task"), add("other")
    w = worker()
    corral.claim(store, task.id, w.id, settings=settings)
    assert {task.id} == {e.task_id for e in store.events.list_events(EventFilter(task_id=task.id))}
    by_worker = [e.name for e in store.events.list_events(EventFilter(worker_id=w.id))]
    assert ["worker.registered", "worker.started", "task.claimed"] == by_worker
    assert other.id not in {
        e.task_id for e in store.events.list_events(EventFilter(worker_id=w.id))
    }


def test_reads_write_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Reads (get, list, ready, why, snapshot) leave the event log and the records unchanged."""
    task = add()
    w = worker()
    before = store.events.list_events(EventFilter(limit=1000))
    store.tasks.get_task(task.id)
    store.tasks.list_tasks(corral.TaskFilter())
    store.tasks.ready_tasks(queue=None, kinds=(), limit=10)
    store.workers.list_workers()
    store.recovery.reconcile_snapshot()
    corral.why(store, task.id, settings=settings)
    assert before == store.events.list_events(EventFilter(limit=1000))
    assert task == store.tasks.get_task(task.id)
    assert w == store.workers.get_worker(w.id)


@pytest.mark.parametrize("record", ["task", "claim", "worker", "event"])
def test_records_have_a_stable_json_shape(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, record: str
) -> None:
    """Every record's to_dict carries at least the keys the CLI documents."""
    task = add()
    w = worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    shapes = {
        "task": (
            store.tasks.get_task(task.id),
            {"id", "title", "status", "queue", "kind", "priority", "attempts"},
        ),
        "claim": (claim, {"task_id", "worker_id", "token", "lease_expires_at"}),
        "worker": (
            store.workers.get_worker(w.id),
            {"id", "name", "status", "hostname", "pid", "last_heartbeat_at"},
        ),
        "event": (
            store.events.list_events(EventFilter(limit=1))[0],
            {"id", "at", "name", "task_id"},
        ),
    }
    obj, keys = shapes[record]
    assert keys <= set(obj.to_dict())
