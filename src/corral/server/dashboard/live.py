"""GET /live?task=&worker=&type=: the event stream a dashboard page listens to.

The API's stream (server/stream.py) with the API's filters, for a browser: the visitor
comes from the session cookie, as EventSource sends no Authorization header. The token
is copied into the request the stream sees, so the stream checks it again every minute
as it does an API client's and ends once it is revoked. A loopback visitor (no token
exists) has none to copy: its stream ends at that check, and the browser reconnects
from its Last-Event-ID at once, losing nothing. A page opens it with `limit=0`: it
wants to hear of what changes from now on, not the past.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.model.following import parse_cursor
from corral.server import stream
from corral.server.context import store_of
from corral.server.dashboard.visitors import LoginNeeded, NotAllowed, Visitor, visitor_of
from corral.server.event_query import EventQuery, event_query
from corral.server.events import LAST_EVENT_ID


async def live(request: Request) -> Response:
    """The events of the page's filters as Server-Sent Events, for a signed-in visitor."""
    try:
        visitor = await run_in_threadpool(visitor_of, request)
    except (LoginNeeded, NotAllowed):
        return Response("sign in first\n", 401, media_type="text/plain")
    query = await run_in_threadpool(_query, request)
    return stream.response(_with_token(request, visitor), query)


def _query(request: Request) -> EventQuery:
    query = event_query(request.query_params, store_of(request))
    resume = request.headers.get(LAST_EVENT_ID)
    if resume is None:
        return query
    return EventQuery(flt=query.flt, after=parse_cursor(LAST_EVENT_ID, resume.strip()))


def _with_token(request: Request, visitor: Visitor) -> Request:
    """`request` as the stream's token check reads it: with the visitor's token, if any."""
    if visitor.presented is None:
        return request
    scope = dict(request.scope)
    scope["headers"] = [
        *[(k, v) for k, v in request.scope["headers"] if k != b"authorization"],
        (b"authorization", f"Bearer {visitor.presented}".encode()),
    ]
    return Request(scope, request.receive)


ROUTES = [Route("/live", live, methods=["GET"])]
