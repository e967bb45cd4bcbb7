"""The query of the event routes: the filters of `corral events --follow`, checked.

    after=XID-ID  task=ID  worker=ID  type=NAME (repeatable)  since=DURATION  limit=N

Each bad value is a one-line InvalidInput naming its parameter (422), before anything is
read; so is a parameter the routes do not know, or one given twice that takes one value:
a typo never silently widens what a client receives.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from starlette.datastructures import QueryParams

from corral.foundation.durations import parse_duration_s
from corral.foundation.errors import InvalidInput
from corral.model.event_cursors import EventCursor, parse_cursor
from corral.model.events import EVENT_NAMES, EventFilter
from corral.model.tasks import check_name
from corral.store import Store

MAX_LIMIT = 1000
DEFAULT_LIMIT = 50  # as `corral events`
_SINGLE = ("after", "task", "worker", "since", "limit")
_KNOWN = (*_SINGLE, "type")


@dataclass(frozen=True, slots=True, kw_only=True)
class EventQuery:
    """What to read: the filter (its `limit` the page's size, or how many of the newest
    to show first) and the cursor to read after (None: the newest)."""

    flt: EventFilter
    after: EventCursor | None


def event_query(query: QueryParams, store: Store) -> EventQuery:
    """The checked query; `store` gives the clock `since` counts back from."""
    for name, _ in query.multi_items():
        if name not in _KNOWN:
            raise InvalidInput(name, "one of the parameters " + ", ".join(_KNOWN))
    for name in _SINGLE:
        if len(query.getlist(name)) > 1:
            raise InvalidInput(name, "one value")
    after = None if "after" not in query else parse_cursor("after", query["after"])
    names = query.getlist("type")
    for name in names:
        if name not in EVENT_NAMES:
            raise InvalidInput("type", "an event name such as task.completed", name)
    for field in ("task", "worker"):
        if field in query:
            check_name(field, query[field])
    since = query.get("since")
    since_s = None if since is None else parse_duration_s("since", since)
    flt = EventFilter(
        task_id=query.get("task"),
        worker_id=query.get("worker"),
        names=tuple(dict.fromkeys(names)),
        since_at=None if since_s is None else store.now() - timedelta(seconds=since_s),
        limit=_limit(query.get("limit"), resuming=after is not None),
    )
    return EventQuery(flt=flt, after=after)


def _limit(raw: str | None, *, resuming: bool) -> int:
    """1 to MAX_LIMIT; 0 too for a first read (no event, only the cursor of now)."""
    if raw is None:
        return DEFAULT_LIMIT
    low = 1 if resuming else 0
    # The length first: int() refuses strings of thousands of digits with an error of its own.
    if not (len(raw) <= 4 and raw.isascii() and raw.isdigit() and low <= int(raw) <= MAX_LIMIT):
        raise InvalidInput("limit", f"a whole number from {low} to {MAX_LIMIT}", raw)
    return int(raw)
