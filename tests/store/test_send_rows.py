"""`Tx.send_rows`: one statement for many rows (a batch's events and runs).

PostgreSQL sends the rows as one JSON array in one statement; SQLite runs the statement
once per row. Either way the rows land in order, share the common parameters and the
transaction's clock, keep their JSON values, and a failing row rolls the whole
transaction back.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral import EventFilter, FakeClock, Store, StoreError
from corral.store import journal

NOT_OVER_HTTP = "the driver's send_rows: a remote store has no driver"


def _entries(count: int) -> list[dict[str, object]]:
    return [
        journal.entry(
            f"test.row{n}",
            actor="test",
            token=n,
            reason=None if n % 2 else f"reason {n}",
            data=None if n % 3 == 0 else {"n": n, "items": [n, "x"]},
        )
        for n in range(5)
    ]


def test_rows_land_in_order_with_their_values_at_the_store_clock(
    store: Store, clock: FakeClock
) -> None:
    """Every row is written, ids follow the rows' order, JSON and NULL values survive."""
    clock.advance(2.5)
    with store._driver.write() as tx:
        journal.record_all(tx, _entries(5))
    events = store.events.list_events(EventFilter(limit=5))  # oldest first
    assert [f"test.row{n}" for n in range(5)] == [e.name for e in events]
    assert sorted(e.id for e in events) == [e.id for e in events]
    assert [None if n % 3 == 0 else {"n": n, "items": [n, "x"]} for n in range(5)] == [
        e.data for e in events
    ]
    assert [None, "reason 0"] == [events[1].reason, events[0].reason]
    assert {clock.now()} == {e.at for e in events}


def test_a_failing_row_rolls_the_whole_transaction_back(store: Store) -> None:
    """A row the table refuses fails the transaction: none of the rows is kept."""
    rows = _entries(3)
    rows[2]["actor"] = None  # events.actor is NOT NULL
    with pytest.raises(StoreError), store._driver.write() as tx:
        journal.record_all(tx, rows)
    assert [] == [
        e for e in store.events.list_events(EventFilter(limit=10)) if e.name.startswith("test.")
    ]
