"""Conformance: the claim cycle (`claim_next`, `complete`) to the letter on both stores.

PostgreSQL runs the cycle as server-side functions and SQLite as named queries from
Python (store/postgres/cycle.py); these tests pin what both must write and refuse exactly
alike: every event field, the refusals' wording, and the state left behind.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import corral
from corral import (
    EventFilter,
    FakeClock,
    InvalidTransition,
    NewTask,
    NewWorker,
    NotFound,
    Settings,
    StaleToken,
    Store,
    Task,
    TaskStatus,
    Worker,
    WorkerStatus,
    WorkerUnavailable,
    open_store,
)

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]


def _events(store: Store, after_id: int = 0) -> list[tuple[Any, ...]]:
    """Every field of the events after `after_id`, but their ids, oldest first."""
    found = store.events.list_events(EventFilter(after_id=after_id, limit=1000))
    return [
        (e.name, e.task_id, e.worker_id, e.token, e.from_status, e.to_status, e.actor, *rest)
        for e in found
        for rest in [(e.reason, e.data, e.at)]
    ]


def _last_event_id(store: Store) -> int:
    found = store.events.list_events(EventFilter(limit=1))
    return found[-1].id if found else 0


@pytest.mark.parametrize("lease_s", [60.0, 90.25])
def test_a_cycle_records_its_events_field_for_field(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker, lease_s: float
) -> None:
    """claim_next + complete write task.claimed, task.completed and task.unblocked exactly so."""
    parent, other = add("parent"), add("other", priority=-1)
    child = add("child", depends_on=(parent.id,))
    waiting = add("waiting", depends_on=(parent.id, other.id))
    w = worker()
    mark = _last_event_id(store)
    claim = corral.claim_next(store, w.id, lease_s=lease_s, settings=settings)
    assert claim is not None
    clock.advance(5)
    done = corral.complete(store, parent.id, token=claim.token, result=[1, "two"])
    claimed_at = clock.now() - timedelta(seconds=5)
    expires = claimed_at + timedelta(seconds=lease_s)
    actor, lease = f"token:{claim.token}", {"lease_expires_at": expires.isoformat()}
    unblocked = (f"{parent.id} done", None, clock.now())
    assert [
        (
            "task.claimed",
            parent.id,
            w.id,
            claim.token,
            "ready",
            "running",
            w.id,
            None,
            lease,
            claimed_at,
        ),
        (
            "task.completed",
            parent.id,
            w.id,
            claim.token,
            "running",
            "done",
            actor,
            None,
            None,
            clock.now(),
        ),
        ("task.unblocked", child.id, None, None, "blocked", "ready", actor, *unblocked),
    ] == _events(store, mark)
    assert (TaskStatus.DONE, [1, "two"], clock.now(), None, None) == (
        done.status,
        done.result,
        done.finished_at,
        done.token,
        done.worker_id,
    )
    assert (TaskStatus.READY, TaskStatus.BLOCKED) == (
        store.tasks.get_task(child.id).status,
        store.tasks.get_task(waiting.id).status,
    )


def test_the_iso_form_of_a_lease_keeps_microseconds_only_when_there_are_some(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """task.claimed's lease_expires_at reads as Python's isoformat, with or without a fraction."""
    add("first")
    add("second")
    w = worker(max_concurrent=2)
    mark = _last_event_id(store)
    corral.claim_next(store, w.id, lease_s=60.0, settings=settings)
    corral.claim_next(store, w.id, lease_s=0.000001, settings=settings)
    assert [
        {"lease_expires_at": "2030-01-01T00:01:00+00:00"},
        {"lease_expires_at": "2030-01-01T00:00:00.000001+00:00"},
    ] == [event[8] for event in _events(store, mark)]


def test_claim_next_refusals_are_worded_exactly_and_write_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """An unknown, draining or full worker is refused with the same words on both stores."""
    task, second = add("one"), add("two")
    full, draining = worker("full"), worker("draining")
    corral.claim_next(store, full.id, settings=settings)
    corral.drain(store, draining.id)
    mark = _last_event_id(store)
    with pytest.raises(NotFound) as missing:
        corral.claim_next(store, "w-nobody", settings=settings)
    assert str(NotFound("worker", "w-nobody")) == str(missing.value)
    with pytest.raises(WorkerUnavailable) as caught:
        corral.claim_next(store, draining.id, settings=settings)
    assert f"worker {draining.id} is draining: it takes no claims" == str(caught.value)
    with pytest.raises(WorkerUnavailable) as caught:
        corral.claim_next(store, full.id, settings=settings)
    assert f"worker {full.id} is at capacity (1 of 1 claims)" == str(caught.value)
    assert [] == _events(store, mark)
    assert (TaskStatus.RUNNING, TaskStatus.READY) == (
        store.tasks.get_task(task.id).status,
        store.tasks.get_task(second.id).status,
    )


def test_claim_next_narrowed_to_nothing_finds_nothing_and_writes_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Asking for kinds or queues outside the declared ones claims nothing, even when full."""
    add(kind="code")
    w = worker(kinds=("code",), queues=("default",))
    mark = _last_event_id(store)
    assert None is corral.claim_next(store, w.id, kinds=("review",), settings=settings)
    assert None is corral.claim_next(store, w.id, queues=("other",), settings=settings)
    assert [] == _events(store, mark)
    assert (WorkerStatus.IDLE, 0) == (
        store.workers.get_worker(w.id).status,
        store.workers.get_worker(w.id).active,
    )


def test_complete_keeps_a_worker_with_another_claim_busy(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """After one of two claims completes the worker stays busy, then idles after the second."""
    add("one")
    add("two")
    w = worker(max_concurrent=2)
    first = corral.claim_next(store, w.id, settings=settings)
    second = corral.claim_next(store, w.id, settings=settings)
    assert first is not None and second is not None
    corral.complete(store, first.task_id, token=first.token)
    after_one = store.workers.get_worker(w.id)
    corral.complete(store, second.task_id, token=second.token)
    after_two = store.workers.get_worker(w.id)
    assert [(WorkerStatus.BUSY, 1, 1), (WorkerStatus.IDLE, 0, 2)] == [
        (found.status, found.active, found.completed_total) for found in (after_one, after_two)
    ]


def test_complete_refusals_are_worded_exactly_and_write_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A stale token after a re-claim, a token on an unclaimed task and an operator's complete
    of a ready task are refused with the Python path's words, and nothing is written."""
    task, idle = add("held"), add("idle")
    w = worker()
    old = corral.claim(store, task.id, w.id, settings=settings)
    corral.release(store, task.id, token=old.token)
    new = corral.claim(store, task.id, w.id, settings=settings)
    mark, before = _last_event_id(store), store.workers.get_worker(w.id)
    refusals = []
    for task_id, token in ((task.id, old.token), (idle.id, old.token), (idle.id, None)):
        with pytest.raises((StaleToken, InvalidTransition)) as caught:
            corral.complete(store, task_id, token=token)
        refusals.append((type(caught.value), str(caught.value), caught.value.exit_code))
    assert [
        (
            StaleToken,
            f"token {old.token} is stale: task {task.id} is now held under token {new.token}",
            1,
        ),
        (
            StaleToken,
            f"token {old.token} is stale: task {idle.id} has no active claim (it is ready)",
            1,
        ),
        (InvalidTransition, str(InvalidTransition(idle.id, "complete", TaskStatus.READY)), 1),
    ] == refusals
    assert [] == _events(store, mark)
    assert before == store.workers.get_worker(w.id)
    assert TaskStatus.RUNNING == store.tasks.get_task(task.id).status


def _named(names: dict[str, str], value: Any) -> Any:
    """`value` with every id in `names` replaced by its title or name."""
    if not isinstance(value, str):
        return value
    for found, name in names.items():
        value = value.replace(found, name)
    return value


def _cycle_scenario(store: Store, clock: FakeClock, settings: Settings) -> list[Any]:
    """A run of claims and completions with kinds, assignees, review, dependencies and
    capacity; everything it left, ids replaced by titles and names so stores compare."""
    names: dict[str, str] = {}
    named = functools.partial(_named, names)

    def add(title: str, **fields: Any) -> Task:
        task = corral.enqueue(store, NewTask(title=title, **fields), settings=settings)
        names[task.id] = title
        return task

    def register(name: str, **fields: Any) -> Worker:
        spec = NewWorker(name=name, hostname="h", pid=None, **fields)
        found = corral.register(store, spec, settings=settings).worker
        names[found.id] = name
        return found

    first = add("first", priority=5)
    add("review me", requires_review=True, priority=4)
    add("after first", depends_on=(first.id,))
    for n in range(4):
        add(f"plain {n}")
    coder, anyone = register("coder", kinds=("code",)), register("anyone", max_concurrent=2)
    add("for coder", kind="code", assignee=coder.id, priority=9)
    add("for anyone", assignee=anyone.id)
    outcomes: list[Any] = []
    for step in range(5):
        clock.advance(0.5 + step / 8)
        held = []
        for w in (coder, anyone, anyone, anyone):
            try:
                claim = corral.claim_next(store, w.id, lease_s=30 + step / 3, settings=settings)
            except WorkerUnavailable as exc:
                outcomes.append(named(str(exc)))
                continue
            outcomes.append(claim and (names[claim.task_id], claim.token, claim.lease_expires_at))
            held += [claim] if claim else []
        clock.advance(0.25)
        for claim in held:
            task = corral.complete(store, claim.task_id, token=claim.token, result={"step": step})
            outcomes.append((names[task.id], task.status, task.result, task.updated_at))
    events = [tuple(named(v) for v in event) for event in _events(store)]
    workers = [
        (names[w.id], w.status, w.active, w.completed_total) for w in store.workers.list_workers()
    ]
    return [outcomes, events, sorted(workers)]


def test_sqlite_and_postgresql_leave_the_same_trace_of_a_run_of_cycles(
    pg_url: str, tmp_path: Path, settings: Settings
) -> None:
    """The same claims and completions on both stores return, record and leave the same."""
    traces = []
    for url in (str(tmp_path / "corral.db"), pg_url):
        clock = FakeClock()
        with open_store(url, clock=clock) as store:
            traces.append(_cycle_scenario(store, clock, settings))
    assert traces[0] == traces[1]
