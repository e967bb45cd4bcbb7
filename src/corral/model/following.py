"""Following the event log: where a follower stands, and what one read gives it.

Apart from model/events.py so that `corral events` (one read, no cursor) does not build
these classes at every start; the store's `events_page` and runtime/follow.py use them.
"""

from __future__ import annotations

from dataclasses import dataclass

from corral.model.events import Event


@dataclass(frozen=True, slots=True, order=True)
class EventCursor:
    """Where a follower of the log stands: every event at or before it has been read.

    Events are read in (xid, id) order: on PostgreSQL `xid` is the writing transaction's
    id; on SQLite, whose writers take turns, it is always 0 and `id` alone orders them.
    """

    xid: int
    id: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EventPage:
    """What one read of a follower returns: the events in cursor order, the cursor to
    read from next (past events that did not match the filter too), and whether events
    already committed wait beyond it (PostgreSQL: behind a transaction still running)."""

    events: list[Event]
    cursor: EventCursor
    pending: bool = False
