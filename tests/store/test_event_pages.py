"""Conformance: a follower's pages of the event log miss nothing and repeat nothing.

`store.events.events_page` is what `corral events --follow` reads (store/events.py): the first
page shows the newest events settled now, each later one continues from the cursor. On
PostgreSQL an event whose transaction commits after one with a higher id must still be
read, once: the test holds such a transaction open by hand.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

import corral
from corral import EventFilter, FakeClock, Settings, Store, Task, Worker, open_store
from corral.model.event_cursors import EventCursor, EventPage
from corral.model.events import EVENT_NAMES

Add = Callable[..., Task]


def _follow(store: Store, flt: EventFilter, cursor: EventCursor) -> tuple[list[int], EventPage]:
    """Every page after `cursor` until one comes back short; the ids read, the last page."""
    ids: list[int] = []
    while True:
        page = store.events.events_page(flt, cursor)
        ids += [e.id for e in page.events]
        cursor = page.cursor
        if len(page.events) < flt.limit:
            return ids, page


def _follow_settled(
    store: Store, flt: EventFilter, cursor: EventCursor, timeout_s: float = 20.0
) -> tuple[list[int], EventPage]:
    """`_follow`, then on again while the last page says events are pending: on a shared
    PostgreSQL server another process's open transaction holds the settled prefix back
    (any test's, in a parallel run) until it ends."""
    deadline = time.monotonic() + timeout_s
    ids, page = _follow(store, flt, cursor)
    while page.pending and time.monotonic() < deadline:
        time.sleep(0.01)  # waiting on another process's transaction, which nothing signals
        more, page = _follow(store, flt, page.cursor)
        ids += more
    return ids, page


def test_the_first_page_is_the_newest_events_and_the_next_ones_follow_on(store: Store, add: Add):
    """First page: the newest `limit`, oldest first; later pages: each event once, in order."""
    for n in range(5):
        add(f"old {n}")
    first = store.events.events_page(EventFilter(limit=2), None)
    deadline = time.monotonic() + 20.0
    while first.pending and time.monotonic() < deadline:  # another test's open transaction
        time.sleep(0.01)
        first = store.events.events_page(EventFilter(limit=2), None)
    for n in range(7):
        add(f"new {n}")
    ids, _ = _follow_settled(store, EventFilter(limit=3), first.cursor)

    # The 12 tasks' events (a store served over HTTP has its token's before them).
    every = [e.id for e in store.events.list_events(EventFilter(limit=100))][-12:]
    assert every[3:5] == [e.id for e in first.events]
    assert every[5:] == ids


def test_a_page_that_matches_nothing_still_moves_the_cursor_on(store: Store, add: Add):
    """The cursor passes events the filter skips, so a quiet filter does not reread the log."""
    first = store.events.events_page(EventFilter(names=("task.cancelled",)), None)
    for n in range(3):
        add(f"t{n}")
    page = store.events.events_page(EventFilter(names=("task.cancelled",)), first.cursor)

    assert [] == page.events
    assert page.cursor > first.cursor
    assert [] == store.events.events_page(EventFilter(), page.cursor).events


def test_pages_filter_by_task_worker_name_and_time(
    store: Store, add: Add, worker: Callable[..., Worker], clock: FakeClock, settings: Settings
):
    """--task, --worker, --type and --since select the same events in pages as in listings."""
    start = store.events.events_page(EventFilter(), None).cursor
    early = add("early")
    clock.advance(600)
    late = add("late")
    w = worker("w1")
    corral.claim(store, late.id, w.id, settings=settings)
    filters = {
        "task": EventFilter(task_id=late.id),
        "worker": EventFilter(worker_id=w.id),
        "names": EventFilter(names=("task.created", "task.claimed")),
        "since": EventFilter(since_at=clock.now()),
    }
    for label, flt in filters.items():
        paged = [e.id for e in store.events.events_page(flt, start).events]
        listed = [e.id for e in store.events.list_events(flt)]
        assert listed == paged, label
        assert paged, label
    created = store.events.events_page(EventFilter(names=("task.created",)), start).events
    assert [early.id, late.id] == [e.task_id for e in created]
    recent = store.events.events_page(EventFilter(since_at=clock.now()), start).events
    assert early.id not in {e.task_id for e in recent}


def test_every_documented_event_name_is_known():
    """`--type` accepts exactly the names docs/state-machines.md lists."""
    doc = (Path(__file__).parents[2] / "docs" / "state-machines.md").read_text()
    table = doc.split("| Event | Written when |", 1)[1].split("\n\n", 1)[0]
    documented = [line.split("`")[1] for line in table.splitlines() if line.startswith("| `")]
    assert sorted(documented) == sorted(EVENT_NAMES)


# -- PostgreSQL: an id drawn before another, committed after it -----------------------------


def _insert_event(conn: psycopg.Connection, title: str) -> int:
    row = conn.execute(
        "INSERT INTO events (at, name, actor, reason) VALUES (now(), 'task.created', 'test', %s)"
        " RETURNING id",
        (title,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def test_an_event_committed_after_a_higher_id_is_read_once_after_it(pg_url: str):
    """Transaction A takes id n, B takes n+1 and commits first: pages give n and n+1 once
    each, n first (the order of their transactions), where tailing by id would skip n."""
    with open_store(pg_url) as store, psycopg.connect(pg_url) as a, psycopg.connect(pg_url) as b:
        start = store.events.events_page(EventFilter(), None).cursor
        low = _insert_event(a, "a")  # A stays open
        high = _insert_event(b, "b")
        b.commit()
        while_open, page = _follow(store, EventFilter(limit=10), start)
        assert page.pending  # B's event waits behind A
        a.commit()
        after, _ = _follow_settled(store, EventFilter(limit=10), page.cursor)

    assert high == low + 1
    assert [] == while_open
    assert [low, high] == after


def test_a_transaction_that_rolls_back_leaves_nothing_to_wait_for(pg_url: str):
    """An event rolled back is never read, and the events after it are."""
    with open_store(pg_url) as store, psycopg.connect(pg_url) as a, psycopg.connect(pg_url) as b:
        start = store.events.events_page(EventFilter(), None).cursor
        _insert_event(a, "a")
        kept = _insert_event(b, "b")
        b.commit()
        a.rollback()
        ids, page = _follow_settled(store, EventFilter(limit=10), start)

    assert [kept] == ids
    assert not page.pending


@pytest.mark.parametrize("limit", [1, 2, 50])
def test_pages_of_any_size_read_interleaved_transactions_in_commit_safe_order(
    pg_url: str, limit: int
):
    """Three transactions interleaved: every event once, each transaction's events together."""
    with open_store(pg_url) as store:
        start = store.events.events_page(EventFilter(), None).cursor
        conns = [psycopg.connect(pg_url) for _ in range(3)]
        try:
            written: dict[int, list[int]] = {n: [] for n in range(3)}
            for round_ in range(3):
                for n, conn in enumerate(conns):
                    written[n].append(_insert_event(conn, f"{n}.{round_}"))
            for n in (2, 0, 1):
                conns[n].commit()
        finally:
            for conn in conns:
                conn.close()
        ids, _ = _follow_settled(store, EventFilter(limit=limit), start)

    assert sorted(i for group in written.values() for i in group) == sorted(ids)
    assert [*written[0], *written[1], *written[2]] == ids  # by transaction, then id
