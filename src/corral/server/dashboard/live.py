"""GET /live?task=&worker=&type=: the event stream a dashboard page listens to.

The API's stream (server/stream.py) with the API's filters, for a browser: the visitor
comes from the session cookie, as EventSource sends no Authorization header. The stream
checks the visitor again every minute, as it does an API client's token, and ends once
the session has ended (signed out, its token revoked or expired); the browser then
reconnects and is refused. A loopback visitor stays one while no token exists. A page
opens it with `limit=0`: it wants to hear of what changes from now on, not the past.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.model.event_cursors import parse_cursor
from corral.server import stream
from corral.server.context import store_of
from corral.server.dashboard.visitors import LoginNeeded, NotAllowed, visitor_of
from corral.server.event_query import EventQuery, event_query
from corral.server.events import LAST_EVENT_ID
from corral.server.roles import declared


async def live(request: Request) -> Response:
    """The events of the page's filters as Server-Sent Events, for a signed-in visitor."""
    try:
        await run_in_threadpool(visitor_of, request, declared(request))
    except (LoginNeeded, NotAllowed):
        return Response("sign in first\n", 401, media_type="text/plain")
    query = await run_in_threadpool(_query, request)
    return stream.response(request, query, still_allowed=_still_a_visitor)


def _still_a_visitor(request: Request) -> bool:
    try:
        visitor_of(request)
    except (LoginNeeded, NotAllowed):
        return False
    return True


def _query(request: Request) -> EventQuery:
    query = event_query(request.query_params, store_of(request))
    resume = request.headers.get(LAST_EVENT_ID)
    if resume is None:
        return query
    return EventQuery(flt=query.flt, after=parse_cursor(LAST_EVENT_ID, resume.strip()))


ROUTES = [Route("/live", live, methods=["GET"])]
