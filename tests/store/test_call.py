"""`Driver.call`: one statement as a write transaction of its own (PostgreSQL's exchange).

On PostgreSQL it runs in autocommit, without BEGIN, COMMIT or the pipeline; on SQLite in
an ordinary write transaction. Either way it commits what the statement wrote, or writes
nothing and raises StoreError, and the store stays usable.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral import EventFilter, FakeClock, Store, StoreError
from corral.store import journal
from corral.store.driver import Json

NOT_OVER_HTTP = "the driver's call: a remote store has no driver"


def _limits(store: Store, queue: str, max_ready: int) -> object:
    return store._driver.call(
        "set_queue_limits",
        queue=queue,
        max_ready=max_ready,
        max_running=None,
        rate=None,
        keep_max_ready=False,
        keep_max_running=False,
        keep_rate=False,
    )


def test_a_call_returns_its_rows_and_commits_at_the_store_clock(
    store: Store, clock: FakeClock
) -> None:
    """The statement's rows come back, its write is committed, and :now is the store's clock."""
    [row] = _limits(store, "api", 5)  # type: ignore[misc]
    assert ("api", 5) == (row["queue"], row["max_ready"])
    assert [("api", 5)] == [(s.queue, s.limits.max_ready) for s in store.queues.queue_stats()]
    clock.advance(1.5)
    event_row = {**journal.entry("test.called", actor="test"), "data": Json(None)}
    assert [] == store._driver.call("insert_event", **event_row)
    [event] = store.events.list_events(EventFilter(limit=1))
    assert ("test.called", clock.now()) == (event.name, event.at)


def test_a_failing_call_writes_nothing_and_leaves_the_store_usable(store: Store) -> None:
    """A statement that fails raises StoreError, leaves no trace, and the next call works."""
    with pytest.raises(StoreError) as caught:
        store._driver.call("insert_dependency", task_id="t-missing", depends_on="t-missing")
    assert "foreign key" in caught.value.message.lower()
    assert [] != _limits(store, "after", 1)
    assert ["after"] == [stat.queue for stat in store.queues.queue_stats()]
