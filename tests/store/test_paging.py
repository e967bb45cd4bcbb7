"""Keyset pages of the listings (model/paging.py) and the worker filters, on every store:
each walk reads every row once, in the listing's order, whatever is added meanwhile, and
the counts match the filters."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import pytest
from tests.conftest import run_under

import corral
from corral import EventFilter, Settings, Store, Task, Worker
from corral.foundation.errors import InvalidInput
from corral.model.paging import cursor, page_of, parse_cursor
from corral.model.states import WorkerStatus
from corral.model.task_pages import PageKey
from corral.model.tasks import TaskFilter
from corral.model.workers import BeatFigures, NewWorker, WorkerFilter

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
T = TypeVar("T")


def walk(read: Callable[[Any, int], list[T]], key: Callable[[T], Any], size: int) -> list[T]:
    """Every row of a listing, a page of `size` at a time, each page read after the last
    row of the one before (`read(after_key_or_None, size + 1)`)."""
    seen: list[T] = []
    after = None
    while True:
        found = read(after, size + 1)
        seen += found[:size]
        if len(found) <= size:
            return seen
        after = key(found[size - 1])


def test_task_pages_walk_every_task_once_while_more_are_added(store: Store, add: Add) -> None:
    """`list` pages read each task once in the order added, tasks added meanwhile too."""
    first = [add(f"t{n}").id for n in range(7)]
    added: list[str] = []

    def read(after: int | None, limit: int) -> list[Task]:
        if len(added) < 2:  # a task arrives between pages
            added.append(add("meanwhile").id)
        return store.tasks.list_tasks(TaskFilter(limit=limit, after_seq=after))

    seen = [t.id for t in walk(read, lambda t: t.seq, 3)]
    assert first + added == seen
    assert 9 == store.tasks.count_tasks(TaskFilter())


def test_a_parents_children_page_both_ways_and_count_alone(store: Store, add: Add) -> None:
    """`list --parent` pages its children (oldest or newest first) and counts only them."""
    parent = add("parent")
    children = [add(f"child {n}", parent_id=parent.id).id for n in range(5)]
    add("not a child")

    def read(newest_first: bool) -> Callable[[int | None, int], list[Task]]:
        return lambda after, limit: store.tasks.list_tasks(
            TaskFilter(parent_id=parent.id, limit=limit, after_seq=after, newest_first=newest_first)
        )

    assert children == [t.id for t in walk(read(False), lambda t: t.seq, 2)]
    assert children[::-1] == [t.id for t in walk(read(True), lambda t: t.seq, 2)]
    assert 5 == store.tasks.count_tasks(TaskFilter(parent_id=parent.id))


def test_ready_pages_keep_the_claim_order(store: Store, add: Add) -> None:
    """`ready` pages walk the claim order (priority, then oldest) without gap or repeat."""
    for n in range(9):
        add(f"t{n}", priority=n % 3 - 1)
    whole = store.tasks.ready_tasks(queue=None, kinds=(), limit=100)

    def read(after: PageKey | None, limit: int) -> list[Task]:
        return store.tasks.ready_tasks(queue=None, kinds=(), limit=limit, after=after)

    paged = walk(read, lambda t: PageKey(priority=t.priority, seq=t.seq), 2)
    assert [t.id for t in whole] == [t.id for t in paged]
    assert 9 == store.tasks.count_ready(queue=None, kinds=())


def test_event_pages_walk_back_from_the_newest(store: Store, add: Add) -> None:
    """`events` pages go from the newest to the oldest, each event once; newer events
    written meanwhile do not shift the pages."""
    for n in range(6):
        add(f"t{n}")
    whole = store.events.list_events(EventFilter(limit=1000))
    flt = EventFilter(names=("task.created",))

    def read(before: int | None, limit: int) -> list[Any]:
        add("newer")  # written while the pages are read: after the first page's cursor
        return store.events.list_events(EventFilter(limit=limit, before_id=before))[::-1]

    paged = walk(read, lambda e: e.id, 4)
    assert [e.id for e in whole][::-1] == [e.id for e in paged][-len(whole) :]
    assert len(whole) + 1 == len(paged)  # the first page saw the first newer one
    assert 6 + 2 == store.events.count_events(flt)  # and the two written meanwhile


def test_run_pages_walk_back_from_the_newest(
    store: Store, add: Add, worker: MakeWorker, settings: Settings
) -> None:
    """`runs` pages read the runs newest first, each once; a worker's runs alone too."""
    holder = worker(max_concurrent=5)
    for n in range(5):
        claim = corral.claim(store, add(f"t{n}").id, holder.id, settings=settings)
        store.runs.start_run(run_under(claim, transcript_path=None, stderr_path=None))
    whole = store.runs.list_runs(limit=100)

    def read(before: int | None, limit: int) -> list[Any]:
        return store.runs.list_runs(worker_id=holder.id, limit=limit, before_seq=before)

    assert [r.id for r in whole] == [r.id for r in walk(read, lambda r: r.seq, 2)]
    assert 5 == store.runs.count_runs(worker_id=holder.id)
    assert 0 == store.runs.count_runs(task_id="t-nosuchtask")


def _register(store: Store, name: str, **fields: Any) -> Worker:
    return corral.register(store, NewWorker(name=name, **fields)).worker


def test_worker_filters_select_by_queue_kind_host_and_labels(store: Store) -> None:
    """A worker serves a queue (kind) it names or, naming none, every one; hosts and label
    pairs must match exactly, every pair given."""
    a = _register(store, "a", queues=("q1",), kinds=("code",), labels={"team": "x", "gpu": "1"})
    b = _register(store, "b", queues=("q2",), hostname="other", labels={"team": "x"})
    c = _register(store, "c")

    def names(**fields: Any) -> list[str]:
        flt = WorkerFilter(**fields)
        found = [w.name for w in store.workers.find_workers(flt)]
        assert len(found) == store.workers.count_workers(flt)
        return found

    assert ["a", "c"] == names(queue="q1")
    assert ["a", "b", "c"] == names(kind="code")
    assert ["b", "c"] == names(kind="review")
    assert ["b"] == names(host="other")
    assert ["a", "b"] == names(labels={"team": "x"})
    assert ["a"] == names(labels={"team": "x", "gpu": "1"})
    assert [] == names(labels={"team": "y"})
    corral.drain(store, c.id)
    assert ["c"] == names(statuses=(WorkerStatus.DRAINING,))
    assert [a.id, b.id, c.id] == [w.id for w in store.workers.find_workers(WorkerFilter())]


def test_worker_pages_walk_the_registration_order(store: Store) -> None:
    """`worker list` pages read every worker once, in the order they registered."""
    made = [_register(store, f"w{n}", labels={"n": str(n % 2)}).id for n in range(7)]

    def read(after: int | None, limit: int) -> list[Worker]:
        return store.workers.find_workers(WorkerFilter(after_seq=after, limit=limit))

    assert made == [w.id for w in walk(read, lambda w: w.seq, 3)]
    odd = WorkerFilter(labels={"n": "1"}, limit=2)
    assert made[1::2][:2] == [w.id for w in store.workers.find_workers(odd)]


def test_heartbeat_deltas_add_up_to_the_reported_totals(store: Store, worker: MakeWorker) -> None:
    """Each beat's completed/failed deltas are kept as the last beat's and summed into the
    worker's reported totals, beside its own and its agents' figures."""
    w = worker()
    beats = [(2, 0), (0, 1), (3, 2)]
    for completed, failed in beats:
        figures = BeatFigures(
            cpu_percent=1.5,
            rss_bytes=10 << 20,
            agent_cpu_percent=180.0,
            agent_rss_bytes=300 << 20,
            active=2,
            completed=completed,
            failed=failed,
        )
        corral.heartbeat(store, w.id, figures=figures)
    seen = store.workers.get_worker(w.id)
    assert (5, 3, 3, 2, 2) == (
        seen.reported_completed_total,
        seen.reported_failed_total,
        seen.completed_delta,
        seen.failed_delta,
        seen.reported_active,
    )
    assert (1.5, 10 << 20, 180.0, 300 << 20) == (
        seen.cpu_percent,
        seen.rss_bytes,
        seen.agent_cpu_percent,
        seen.agent_rss_bytes,
    )
    corral.heartbeat(store, w.id)  # a bare beat: no agent running, nothing ended
    after = store.workers.get_worker(w.id)
    assert (None, 0, 5, 1.5) == (
        after.agent_rss_bytes,
        after.completed_delta,
        after.reported_completed_total,
        after.cpu_percent,
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"cpu_percent": -1.0},
        {"cpu_percent": float("nan")},
        {"agent_cpu_percent": float("inf")},
        {"rss_bytes": -5},
        {"completed": -1},
        {"failed": True},
        {"active": 2**31},
    ],
)
def test_bad_heartbeat_figures_are_refused_by_name(fields: dict[str, Any]) -> None:
    """A negative, non-finite or out-of-range figure is refused naming its field."""
    with pytest.raises(InvalidInput) as refused:
        BeatFigures(**fields)
    assert next(iter(fields)) == refused.value.field


def test_cursors_are_opaque_and_checked() -> None:
    """A cursor reads back as its key in its own listing only; anything else is refused
    naming --after."""
    made = cursor("ready", (-3, 42))
    assert (-3, 42) == parse_cursor("ready", made, 2)
    for bad in ("", "x", made + "!", cursor("list", (1,)), cursor("ready", (1,)), "é" * 10):
        with pytest.raises(InvalidInput) as refused:
            parse_cursor("ready", bad, 2)
        assert "after" == refused.value.field
    rows, after = page_of([1, 2, 3], 2, "list", lambda n: (n,))
    assert ([1, 2], (2,)) == (rows, parse_cursor("list", after or "", 1))
    assert ([1, 2, 3], None) == page_of([1, 2, 3], 3, "list", lambda n: (n,))
