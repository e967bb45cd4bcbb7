"""The events page: the audit trail, newest first, filtered by name, task, worker and age,
live, paged by id both ways.

GET /events?type=NAME&task=ID&worker=ID&since=DURATION&limit=N&older=ID|newer=ID

The filters are the API's (server/event_query.py checks them alike); a form sends every
field, so empty ones are dropped before the check. `older` and `newer` are the page's
keyset: the events below or above an event's id (a page reads an index from there, so
the thousandth page costs what the first does).
"""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import urlencode

from starlette.datastructures import QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.foundation.errors import InvalidInput
from corral.model.events import EVENT_NAMES, Event
from corral.server.context import store_of
from corral.server.dashboard import event_names
from corral.server.dashboard.guards import page
from corral.server.dashboard.pages import render
from corral.server.dashboard.visitors import Visitor
from corral.server.event_query import event_query

SHOWN = "200"  # the newest events a page shows, unless `limit` says otherwise
PAGING = ("older", "newer")


def events_page(request: Request, visitor: Visitor) -> Response:
    """A page of the events that match the filters, newest first."""
    given = [(k, v.strip()) for k, v in request.query_params.multi_items() if v.strip()]
    keys = {k: _event_id(k, v) for k, v in given if k in PAGING}
    if len(keys) > 1:
        raise InvalidInput("newer", "no `newer` beside `older`")
    given = [(k, v) for k, v in given if k not in PAGING]
    if "limit" not in dict(given):
        given.append(("limit", SHOWN))
    store = store_of(request)
    query = event_query(QueryParams(given), store)
    limit = query.flt.limit
    found = store.events.events_around(
        replace(query.flt, limit=limit + 1),  # one more says whether a page lies beyond
        older_than=keys.get("older"),
        newer_than=keys.get("newer"),
    )
    events = _shown(found, limit, newer="newer" in keys)
    beyond = len(found) > limit
    stream_filters = [(k, v) for k, v in given if k in ("type", "task", "worker")]
    return render(
        request,
        visitor,
        "events.html",
        events=events,
        titles=event_names.task_titles(store, events),
        actors=event_names.actor_names(store, events),
        workers=event_names.worker_names(store, [e.worker_id for e in events]),
        names=EVENT_NAMES,
        chosen=query.flt,
        since=request.query_params.get("since", ""),
        newest_url=_link(given) if keys else None,
        newer_url=_link(given, newer=events[0].id)
        if events and ("older" in keys or ("newer" in keys and beyond))
        else None,
        older_url=_link(given, older=events[-1].id)
        if events and ("newer" in keys or beyond)
        else None,
        live=None if keys else "/live?" + str(QueryParams([*stream_filters, ("limit", "0")])),
    )


def _shown(found: list[Event], limit: int, *, newer: bool) -> list[Event]:
    """The page's events, newest first, of the `limit` + 1 read: the one beyond the page
    is the oldest read going back, the newest going forward."""
    if len(found) <= limit:
        return found
    return found[1:] if newer else found[:limit]


def _event_id(field: str, raw: str) -> int:
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
        raise InvalidInput(field, "the id of an event on the page", raw[:20])
    return int(raw)


def _link(given: list[tuple[str, str]], **key: int) -> str:
    return "/events?" + urlencode([*given, *((k, str(v)) for k, v in key.items())])


ROUTES = [Route("/events", page(events_page), methods=["GET"])]
