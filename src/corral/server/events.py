"""Event routes: the log a page at a time, and as a stream of Server-Sent Events.

GET /api/events?after=&task=&worker=&type=&since=&limit=          viewer   one page
GET /api/events/stream?after=&task=&worker=&type=&since=&limit=   viewer   SSE

Both read the store's follower pages (`store.events.events_page`), whose cursor never misses or
repeats an event, on PostgreSQL too, where an event may commit after one with a higher id.
A page answers its events and the cursor to pass as `after` next; the stream sends each
event with that event's own cursor as its `id:`, so a client that reconnects with
`Last-Event-ID` goes on from the last event it received (stream.py).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.model.event_cursors import parse_cursor
from corral.server import stream
from corral.server.answers import answer
from corral.server.auth import require
from corral.server.context import store_of
from corral.server.event_query import EventQuery, event_query

LAST_EVENT_ID = "Last-Event-ID"


def list_events(request: Request) -> Response:
    """The page after `after` (without it: the newest `limit`), and the cursor to go on
    from; `more` says to read again at once (a full page, or events behind a commit)."""
    store = store_of(request)
    require(request, store)
    query = event_query(request.query_params, store)
    page = store.events.events_page(query.flt, query.after)
    return answer(
        {
            "events": [e.to_dict() for e in page.events],
            "cursor": str(page.cursor),
            "more": page.pending,
        }
    )


async def stream_events(request: Request) -> Response:
    """The matching events as they settle, as Server-Sent Events, from `Last-Event-ID`
    (a reconnecting client), else `after`, else the newest `limit`."""
    query = await run_in_threadpool(_stream_query, request)
    return stream.response(request, query)


def _stream_query(request: Request) -> EventQuery:
    store = store_of(request)
    require(request, store)
    query = event_query(request.query_params, store)
    resume = request.headers.get(LAST_EVENT_ID)
    if resume is None:
        return query
    return EventQuery(flt=query.flt, after=parse_cursor(LAST_EVENT_ID, resume.strip()))


ROUTES = [
    Route("/api/events", list_events, methods=["GET"]),
    Route("/api/events/stream", stream_events, methods=["GET"]),
]
