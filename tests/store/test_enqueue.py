"""Conformance: enqueue, claim order, delays and dependencies."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest

import corral
from corral import (
    EventFilter,
    FakeClock,
    InvalidInput,
    NotFound,
    Settings,
    Store,
    Task,
    TaskFilter,
    TaskStatus,
    Worker,
)

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
Names = Callable[..., list[str]]


def test_enqueue_answers_a_ready_task_with_defaults_from_settings(
    store: Store, settings: Settings, add: Add
) -> None:
    """A new task without dependencies is ready, unattempted, with the settings' retry budget."""
    task = add("Fix the login bug", kind="code", priority=5, payload={"n": 1})
    assert TaskStatus.READY == task.status
    assert ("Fix the login bug", "code", 5, "default") == (
        task.title,
        task.kind,
        task.priority,
        task.queue,
    )
    assert {"n": 1} == task.payload
    assert 0 == task.attempts
    assert settings.max_attempts == task.max_attempts
    assert settings.retry_base_s == task.retry_base_s
    assert store.now() == task.created_at
    assert task == store.tasks.get_task(task.id)


def test_task_fields_override_settings(add: Add) -> None:
    """A task's own max_attempts and retry base win over the settings' defaults."""
    task = add(max_attempts=7, retry_base_s=0.0)
    assert 7 == task.max_attempts
    assert 0.0 == task.retry_base_s


def test_unknown_task_id_is_not_found(store: Store) -> None:
    """Reading a task that does not exist raises NotFound (exit code 2) naming the id."""
    with pytest.raises(NotFound, match="t-nothing") as caught:
        store.tasks.get_task("t-nothing")
    assert 2 == caught.value.exit_code


def test_ready_tasks_come_by_priority_then_oldest_first(store: Store, add: Add) -> None:
    """Higher priority first; among equal priorities, the task enqueued first comes first."""
    low = add("low", priority=0)
    first_high = add("first high", priority=5)
    mid = add("mid", priority=3)
    second_high = add("second high", priority=5)
    ready = store.tasks.ready_tasks(queue=None, kinds=(), limit=10)
    assert [first_high.id, second_high.id, mid.id, low.id] == [t.id for t in ready]


def test_claim_next_follows_priority_then_fifo(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Successive claim_next calls hand out tasks in priority, then FIFO, order."""
    ids = [add("a", priority=1).id, add("b", priority=9).id, add("c", priority=1).id]
    w = worker("w", max_concurrent=3)
    claimed = [corral.claim_next(store, w.id, settings=settings) for _ in ids]
    assert [ids[1], ids[0], ids[2]] == [c.task_id for c in claimed if c is not None]


def test_ready_tasks_filter_by_queue_and_kind(store: Store, add: Add) -> None:
    """ready_tasks narrows to one queue and to a set of kinds."""
    code_a = add(kind="code", queue="a")
    add(kind="review", queue="a")
    code_b = add(kind="code", queue="b")
    assert [code_a.id] == [
        t.id for t in store.tasks.ready_tasks(queue="a", kinds=("code",), limit=9)
    ]
    assert [code_a.id, code_b.id] == [
        t.id for t in store.tasks.ready_tasks(queue=None, kinds=("code",), limit=9)
    ]


def test_list_tasks_filters_by_status(store: Store, add: Add) -> None:
    """list_tasks returns only tasks in the asked statuses, oldest first."""
    first = add("first")
    blocker = add("blocker")
    add("blocked", depends_on=(blocker.id,))
    ready = store.tasks.list_tasks(TaskFilter(statuses=(TaskStatus.READY,)))
    assert [first.id, blocker.id] == [t.id for t in ready]


def test_list_tasks_newest_first_keeps_the_newest_within_the_limit(store: Store, add: Add) -> None:
    """newest_first: the newest matching tasks, newest first, filters and limit as before."""
    ids = [add(f"t{n}", kind="session" if n % 2 else "default").id for n in range(5)]
    newest = store.tasks.list_tasks(TaskFilter(kinds=("session",), limit=1, newest_first=True))
    assert [ids[3]] == [t.id for t in newest]
    every = store.tasks.list_tasks(TaskFilter(newest_first=True))
    assert ids[::-1] == [t.id for t in every]


def test_tasks_with_payload_finds_a_kinds_tasks_by_a_payload_field(store: Store, add: Add) -> None:
    """Only tasks of the kind whose field is that text, newest first, at most `limit`."""
    older = add("older", kind="session", payload={"session": "agent:a"}).id
    add("another label", kind="session", payload={"session": "agent:b"})
    add("another kind", payload={"session": "agent:a"})
    add("a number", kind="session", payload={"session": 7})
    newer = add("newer", kind="session", payload={"session": "agent:a"}).id
    found = store.tasks.tasks_with_payload("session", "session", "agent:a", 10)
    assert [newer, older] == [t.id for t in found]
    assert [newer] == [
        t.id for t in store.tasks.tasks_with_payload("session", "session", "agent:a", 1)
    ]
    assert [] == store.tasks.tasks_with_payload("session", "session", "7", 10)


def test_run_after_delays_a_task_until_its_time(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A delayed task is not in ready_tasks nor claimable until the clock passes run_after."""
    task = add(run_after_s=600)
    w = worker()
    assert store.now() + timedelta(seconds=600) == task.run_after
    assert [] == store.tasks.ready_tasks(queue=None, kinds=(), limit=10)
    assert None is corral.claim_next(store, w.id, settings=settings)
    with pytest.raises(corral.Refused, match="delayed until"):
        corral.claim(store, task.id, w.id, settings=settings)
    clock.advance(600)
    assert [task.id] == [t.id for t in store.tasks.ready_tasks(queue=None, kinds=(), limit=10)]
    claim = corral.claim_next(store, w.id, settings=settings)
    assert claim is not None
    assert task.id == claim.task_id


def test_depends_on_blocks_until_every_dependency_is_done(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names
) -> None:
    """A task stays blocked until all its dependencies are done, then is unblocked (an event)."""
    first, second = add("first"), add("second")
    dependent = add("dependent", depends_on=(first.id, second.id))
    assert TaskStatus.BLOCKED == dependent.status
    assert {first.id, second.id} == set(dependent.depends_on)
    w = worker(max_concurrent=2)
    for dep in (first, second):
        claim = corral.claim(store, dep.id, w.id, settings=settings)
        assert TaskStatus.BLOCKED == store.tasks.get_task(dependent.id).status
        corral.complete(store, dep.id, token=claim.token)
    assert TaskStatus.READY == store.tasks.get_task(dependent.id).status
    assert ["task.created", "task.unblocked"] == events(task_id=dependent.id)


def test_a_blocked_task_cannot_be_claimed(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Neither claim nor claim_next hands out a blocked task."""
    blocker = add("blocker", kind="other")
    blocked = add("blocked", depends_on=(blocker.id,))
    w = worker(kinds=("default",))
    assert None is corral.claim_next(store, w.id, settings=settings)
    with pytest.raises(corral.Refused, match="it is blocked"):
        corral.claim(store, blocked.id, w.id, settings=settings)
    assert TaskStatus.BLOCKED == store.tasks.get_task(blocked.id).status


def test_a_dependency_already_done_does_not_block(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Depending only on done tasks makes a task ready at once."""
    dep = add("dep")
    w = worker()
    claim = corral.claim(store, dep.id, w.id, settings=settings)
    corral.complete(store, dep.id, token=claim.token)
    assert TaskStatus.READY == add("after", depends_on=(dep.id,)).status


@pytest.mark.parametrize("end", ["fail", "cancel"])
def test_a_dead_dependency_keeps_the_dependent_blocked_and_why_names_it(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, end: str
) -> None:
    """A failed or cancelled dependency keeps its dependent blocked; `why` says dependency_dead."""
    dep = add("dep", max_attempts=1)
    dependent = add("dependent", depends_on=(dep.id,))
    if end == "fail":
        claim = corral.claim(store, dep.id, worker().id, settings=settings)
        corral.fail(store, dep.id, error="boom", token=claim.token, settings=settings)
    else:
        corral.cancel(store, dep.id)
    diagnosis = corral.why(store, dependent.id, settings=settings)
    assert TaskStatus.BLOCKED == diagnosis.task.status
    assert ["dependency_dead"] == [r.code for r in diagnosis.reasons]
    assert dep.id in diagnosis.reasons[0].message


def test_retrying_a_dead_dependency_lets_the_dependent_run_later(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A retried dependency that then completes unblocks its dependent."""
    dep = add("dep")
    dependent = add("dependent", depends_on=(dep.id,))
    corral.cancel(store, dep.id)
    corral.retry(store, dep.id)
    claim = corral.claim(store, dep.id, worker().id, settings=settings)
    corral.complete(store, dep.id, token=claim.token)
    assert TaskStatus.READY == store.tasks.get_task(dependent.id).status


def test_a_missing_dependency_is_invalid_input_and_writes_nothing(
    store: Store, add: Add, events: Names
) -> None:
    """Depending on an id that names no task raises InvalidInput and leaves the store untouched."""
    existing = add("existing")
    before = events()
    with pytest.raises(InvalidInput, match="t-missing") as caught:
        add("dependent", depends_on=(existing.id, "t-missing"))
    assert "depends_on" == caught.value.field
    assert [existing.id] == [t.id for t in store.tasks.list_tasks(TaskFilter())]
    assert before == events()


def test_a_missing_parent_is_invalid_input(store: Store, add: Add) -> None:
    """A parent id that names no task is refused before anything is written."""
    with pytest.raises(InvalidInput, match="parent"):
        add("child", parent_id="t-missing")
    assert [] == store.tasks.list_tasks(TaskFilter())


def test_enqueue_records_task_created(store: Store, add: Add) -> None:
    """Enqueue writes one task.created event with the initial status."""
    task = add()
    [event] = store.events.list_events(EventFilter(task_id=task.id))
    assert ("task.created", None, "ready", "operator") == (
        event.name,
        event.from_status,
        event.to_status,
        event.actor,
    )


def test_the_longest_timeout_and_delay_round_trip(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A task at the largest accepted timeout and delay reads back and can be claimed."""
    task = add(timeout_s=3.1e9, run_after_s=3.1e9, priority=2**31 - 1)
    clock.advance(3.1e9)
    claim = corral.claim_next(store, worker().id, settings=settings)
    assert claim is not None
    assert (task.id, claim.claimed_at + timedelta(seconds=3.1e9)) == (
        claim.task_id,
        claim.deadline_at,
    )


def test_run_at_is_kept_as_the_exact_instant(store: Store, add: Add, clock: FakeClock) -> None:
    """An absolute run_at is stored as given, not as now plus a rounded delay."""
    when = clock.now() + timedelta(hours=2, microseconds=7)
    assert when == add("later", run_at=when).run_after


def test_ready_for_a_worker_that_may_not_claim_is_empty(
    store: Store, add: Add, worker: MakeWorker
) -> None:
    """A draining (or dead) worker's view of ready work is empty: it may claim nothing."""
    add("something")
    w = worker()
    corral.drain(store, w.id)
    assert [] == store.tasks.ready_tasks(
        queue=None, kinds=(), limit=10, worker=store.workers.get_worker(w.id)
    )
