"""Conformance: per-queue limits (max_ready, max_running, rate) enforced by the store."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable

import pytest

import corral
from corral import (
    FakeClock,
    InvalidInput,
    LimitReached,
    QueueLimits,
    Settings,
    Store,
    Task,
    TaskStatus,
    Worker,
)

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]


def test_max_ready_refuses_enqueue_and_writes_nothing(store: Store, add: Add) -> None:
    """With max_ready 2, a third waiting task is refused; ready and blocked both count."""
    corral.set_queue_limits(store, "small", {"max_ready": 2})
    first = add(queue="small")
    add(queue="small", depends_on=(first.id,))  # blocked: still waiting
    with pytest.raises(LimitReached, match="queue 'small' is full: 2 tasks waiting"):
        add("one too many", queue="small")
    assert 2 == len(store.tasks.list_tasks(corral.TaskFilter(queue="small")))
    add(queue="other")  # other queues are not limited


def test_max_ready_counts_only_waiting_tasks(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A claimed task no longer waits: the queue takes a new one."""
    corral.set_queue_limits(store, "small", {"max_ready": 1})
    add(queue="small")
    corral.claim_next(store, worker().id, settings=settings)
    assert TaskStatus.READY == add(queue="small").status


def test_max_running_passes_the_queue_by_until_a_task_ends(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """At max_running, claim:next takes the next queue's task; a finished task frees a place."""
    corral.set_queue_limits(store, "api", {"max_running": 1})
    first = add("api 1", queue="api", priority=9)
    add("api 2", queue="api", priority=9)
    other = add("bulk", queue="bulk")
    w = worker(max_concurrent=5)
    assert first.id == corral.claim_next(store, w.id, settings=settings).task_id
    assert other.id == corral.claim_next(store, w.id, settings=settings).task_id
    assert None is corral.claim_next(store, w.id, settings=settings)
    corral.complete(store, first.id)
    assert (
        "api 2"
        == store.tasks.get_task(corral.claim_next(store, w.id, settings=settings).task_id).title
    )


def test_claim_by_id_in_a_held_queue_is_refused_naming_the_limit(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """`claim ID` is refused with LimitReached naming the limit that holds the queue."""
    corral.set_queue_limits(store, "api", {"max_running": 1})
    add(queue="api")
    second = add(queue="api")
    w = worker(max_concurrent=5)
    corral.claim_next(store, w.id, settings=settings)
    with pytest.raises(LimitReached, match=r"queue 'api' is at max_running \(1 of 1 running\)"):
        corral.claim(store, second.id, w.id, settings=settings)
    assert (TaskStatus.READY, 0) == (
        store.tasks.get_task(second.id).status,
        store.tasks.get_task(second.id).attempts,
    )


def test_rate_limits_claims_started_per_minute(
    store: Store, settings: Settings, clock: FakeClock, add: Add, worker: MakeWorker
) -> None:
    """rate 2: two claims start, the third waits until the first is a minute old."""
    corral.set_queue_limits(store, "api", {"rate": 2})
    for n in range(4):
        add(f"api {n}", queue="api")
    w = worker(max_concurrent=5)
    assert corral.claim_next(store, w.id, settings=settings) is not None
    clock.advance(30)
    assert corral.claim_next(store, w.id, settings=settings) is not None
    assert None is corral.claim_next(store, w.id, settings=settings)
    [stat] = corral.queue_stats(store, "api")
    assert stat.held is not None and "rate" in stat.held
    clock.advance(30.5)
    assert corral.claim_next(store, w.id, settings=settings) is not None


def test_set_queue_limits_changes_only_the_named_limits(store: Store) -> None:
    """Each call changes the limits it names; None removes one; no limit left removes the row."""
    assert QueueLimits(max_running=2) == corral.set_queue_limits(store, "q", {"max_running": 2})
    assert QueueLimits(max_running=2, rate=10.0) == corral.set_queue_limits(
        store, "q", {"rate": 10}
    )
    assert QueueLimits(rate=10.0) == corral.set_queue_limits(store, "q", {"max_running": None})
    corral.set_queue_limits(store, "q", {"rate": None})
    assert [] == corral.queue_stats(store, "q")


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"max_running": 0}, "max_running"),
        ({"max_ready": 2.5}, "max_ready"),
        ({"rate": -1}, "rate"),
        ({}, "limits"),
    ],
)
def test_bad_limits_are_refused_and_nothing_is_written(
    store: Store, changes: dict[str, float], field: str
) -> None:
    """A limit that is not a positive number (whole for counts) names the field."""
    with pytest.raises(InvalidInput) as caught:
        corral.set_queue_limits(store, "q", changes)
    assert field == caught.value.field
    assert [] == corral.queue_stats(store)


def test_queue_stats_show_depth_load_and_what_is_held(
    store: Store, settings: Settings, clock: FakeClock, add: Add, worker: MakeWorker
) -> None:
    """ready, delayed, blocked and running per queue, with the limit that holds it back."""
    corral.set_queue_limits(store, "api", {"max_running": 1, "max_ready": 3})
    first = add(queue="api")
    add(queue="api", run_after_s=60)
    add(queue="api", depends_on=(first.id,))
    corral.claim_next(store, worker().id, settings=settings)
    [stat] = corral.queue_stats(store, "api")
    assert (0, 1, 1, 1, 1) == (
        stat.ready,
        stat.delayed,
        stat.blocked,
        stat.running,
        stat.started_last_minute,
    )
    assert "at max_running (1 of 1 running)" == stat.held
    assert not stat.full
    add(queue="api")
    assert corral.queue_stats(store, "api")[0].full


def test_configured_limits_are_written_exactly(store: Store) -> None:
    """A configured queue gets the file's limits, replacing what the store had for it."""
    corral.set_queue_limits(store, "api", {"max_running": 5, "rate": 10})
    configured = Settings(queues={"api": QueueLimits(max_running=2)})
    assert ["api"] == corral.apply_configured_limits(store, configured)
    [stat] = corral.queue_stats(store, "api")
    assert QueueLimits(max_running=2) == stat.limits


def test_why_names_the_queue_limit(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """`why` on a ready task of a held queue gives the code queue_limit."""
    corral.set_queue_limits(store, "api", {"max_running": 1})
    add(queue="api")
    waiting = add(queue="api")
    corral.claim_next(store, worker(max_concurrent=2).id, settings=settings)
    codes = [r.code for r in corral.why(store, waiting.id).reasons]
    assert "queue_limit" in codes
