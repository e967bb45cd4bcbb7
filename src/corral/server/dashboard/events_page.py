"""The events page: the audit trail, newest first, filtered by name, task, worker and age,
live.

GET /events?type=NAME&task=ID&worker=ID&since=DURATION&limit=N

The filters are the API's (server/event_query.py checks them alike); a form sends every
field, so empty ones are dropped before the check.
"""

from __future__ import annotations

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.model.events import EVENT_NAMES
from corral.server.context import store_of
from corral.server.dashboard.guards import page
from corral.server.dashboard.pages import render
from corral.server.dashboard.visitors import Visitor
from corral.server.event_query import event_query

SHOWN = "200"  # the newest events a page shows, unless `limit` says otherwise


def events_page(request: Request, visitor: Visitor) -> Response:
    """The newest events that match the filters."""
    given = [(k, v.strip()) for k, v in request.query_params.multi_items() if v.strip()]
    if "limit" not in dict(given):
        given.append(("limit", SHOWN))
    store = store_of(request)
    query = event_query(QueryParams(given), store)
    stream_filters = [(k, v) for k, v in given if k in ("type", "task", "worker")]
    return render(
        request,
        visitor,
        "events.html",
        events=list(reversed(store.list_events(query.flt))),
        names=EVENT_NAMES,
        chosen=query.flt,
        since=request.query_params.get("since", ""),
        live="/live?" + str(QueryParams([*stream_filters, ("limit", "0")])),
    )


ROUTES = [Route("/events", page(events_page), methods=["GET"])]
