"""The overview's snapshot of the task figures on SQLite and PostgreSQL: read again only
when the event log has moved, at most once a second, off the request (an injected clock
and an injected spawn stand for the monotonic clock and the thread). The head is the
newest event's id: PostgreSQL's `events_head` also moves as other sessions' transactions
end, which a test beside others cannot hold still."""

from __future__ import annotations

from collections.abc import Callable

from corral.model.events import EventFilter
from corral.model.tasks import NewTask
from corral.server.dashboard.snapshot import Snapshot
from corral.usecases.tasks import enqueue


def test_the_figures_follow_the_log_at_most_once_a_second(store):
    """A change of the log makes the next request start one refresh, once a second has
    passed since the last reading; until it has run, the figures held are served and
    said not to be current; after, they are current again."""
    now = [0.0]
    spawned: list[Callable[[], None]] = []
    reads = []

    def read() -> int:
        reads.append(now[0])
        return sum(n for *_, n in store.tasks.task_gauges())

    def head() -> list[int]:
        return [e.id for e in store.events.list_events(EventFilter(limit=1))]

    snapshot = Snapshot(read, lambda: tuple(head()), clock=lambda: now[0], spawn=spawned.append)
    first = snapshot.get()
    assert (0, True) == (first.value, first.current)
    assert (0, True) == (snapshot.get().value, snapshot.get().current)  # no change: no read
    assert [0.0] == reads
    enqueue(store, NewTask(title="a"))
    assert (0, False) == (snapshot.get().value, snapshot.get().current)
    assert [] == spawned  # not a second since the last reading
    now[0] = 1.0
    assert not snapshot.get().current
    assert not snapshot.get().current
    assert 1 == len(spawned)  # one refresh at a time
    spawned.pop()()
    assert (1, True) == (snapshot.get().value, snapshot.get().current)
    enqueue(store, NewTask(title="b"))
    now[0] = 1.5
    assert (1, False) == (snapshot.get().value, snapshot.get().current)
    assert [] == spawned
    now[0] = 2.0
    snapshot.get()
    spawned.pop()()
    assert (2, True) == (snapshot.get().value, snapshot.get().current)
    assert [0.0, 1.0, 2.0] == reads


def test_a_page_opened_reads_figures_behind_the_log_at_once(store):
    """`get(fresh=True)` (a page opened) reads again in the caller's thread when the log
    moved, however soon after the last reading, and not when it has not."""
    spawned: list[Callable[[], None]] = []
    reads = []

    def read() -> int:
        reads.append(1)
        return sum(n for *_, n in store.tasks.task_gauges())

    def head() -> tuple[int, ...]:
        return tuple(e.id for e in store.events.list_events(EventFilter(limit=1)))

    snapshot = Snapshot(read, head, clock=lambda: 0.0, spawn=spawned.append)
    assert (0, True) == (snapshot.get().value, snapshot.get().current)
    enqueue(store, NewTask(title="a"))
    assert (1, True) == (snapshot.get(fresh=True).value, snapshot.get(fresh=True).current)
    assert 2 == len(reads)  # the second fresh read found the figures current
    assert [] == spawned
