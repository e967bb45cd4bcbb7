"""Following the event log: where a follower stands, and what one read gives it.

Apart from model/events.py so that `corral events` (one read, no cursor) does not build
these classes at every start; the store's `events_page`, runtime/follow.py and the HTTP
API (`after=`, an SSE stream's `id:`) use them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from corral.foundation.errors import InvalidInput
from corral.foundation.records import record
from corral.model.events import Event

MAX_XID = 2**64 - 1  # PostgreSQL's xid8
MAX_ID = 2**63 - 1  # a bigint, SQLite's integer
_WRITTEN = re.compile(r"([0-9]{1,20})-([0-9]{1,19})")


@dataclass(frozen=True, slots=True, order=True)
class EventCursor:
    """Where a follower of the log stands: every event at or before it has been read.

    Events are read in (xid, id) order: on PostgreSQL `xid` is the writing transaction's
    id; on SQLite, whose writers take turns, it is always 0 and `id` alone orders them.
    Written `XID-ID` (`0-1234`), as the HTTP API hands it out and takes it back.
    """

    xid: int
    id: int

    def __str__(self) -> str:
        return f"{self.xid}-{self.id}"


def parse_cursor(field: str, text: str) -> EventCursor:
    """The cursor written as `text` (`XID-ID`, as str() writes it); InvalidInput naming
    `field` when it is not one."""
    found = _WRITTEN.fullmatch(text)
    if found is None or int(found[1]) > MAX_XID or int(found[2]) > MAX_ID:
        raise InvalidInput(field, "a cursor such as 0-1234, as a page or stream gave it", text)
    return EventCursor(int(found[1]), int(found[2]))


@record(frozen=True, slots=True, kw_only=True)
class EventPage:
    """What one read of a follower returns: the events in cursor order, each one's own
    cursor (`cursors[i]` is that of `events[i]`: a reader that stops after it goes on
    from there), the cursor to read from next (past events that did not match the filter
    too), and whether events already committed wait beyond it (PostgreSQL: behind a
    transaction still running)."""

    events: list[Event]
    cursor: EventCursor
    cursors: tuple[EventCursor, ...] = ()
    pending: bool = False
