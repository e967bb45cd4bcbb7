"""The SSE stream of events: each matching event as it settles, resumable without loss.

    first read (the newest `limit`, or the page after the client's cursor)
      ─► each event sent as `id: <its cursor>` + `data: <its JSON>`
      ─► `id: <cursor>` alone (no data: no event) where the stream stands, after the
         first read and after MARK_EVERY_S of events that did not match
      ─► wait for a wake-up (wakeups.py), or PENDING_POLL_S while committed events wait
         behind a transaction (PostgreSQL) ─► the page after the cursor ─► ...

An id is the cursor of the event it came with: every matching event at or before it has
been sent. A client that reconnects with `Last-Event-ID` (browsers do it themselves) is
sent what follows it, once. sse-starlette sends a comment every PING_S, so proxies keep
the connection and a client that went away is noticed; it ends the response when the
client disconnects or the server shuts down (it watches uvicorn's exit), and the
generator's `finally` gives up its wake-up. While the store is unreachable the stream
retries its read, doubling its wait to RETRY_MAX_S, and goes on from the same cursor. A
token revoked or expired ends its open streams within REAUTH_S.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from collections.abc import AsyncIterator, Callable

import anyio
from sse_starlette import EventSourceResponse, ServerSentEvent
from sse_starlette.sse import SendTimeoutError
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from corral.foundation.clock import SystemClock
from corral.foundation.errors import StoreError
from corral.model.event_cursors import EventCursor, EventPage
from corral.model.events import Event, EventFilter
from corral.runtime.follow import PAGE_SIZE, PENDING_POLL_S, RETRY_FIRST_S, RETRY_MAX_S
from corral.server.auth import Denied, require
from corral.server.context import store_of
from corral.server.event_query import EventQuery
from corral.store import Store

PING_S = 15.0  # a comment this often: proxies drop connections idle for 30 to 60 s
SEND_TIMEOUT_S = 60.0  # a client that stops reading is dropped after this
MARK_EVERY_S = 15.0  # the longest a quiet, filtered stream's position goes unsent
REAUTH_S = 60.0  # how often an open stream checks its token again
# On shutdown, the longest a stream may take to end its response cleanly (its generator
# returns at once unless a read is under way) before it is cancelled.
SHUTDOWN_GRACE_S = 1.0


class _Response(EventSourceResponse):
    """sse-starlette's response; a client that stopped reading ends it quietly (it is
    dropped, not an error of the server's)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        with contextlib.suppress(SendTimeoutError):
            await super().__call__(scope, receive, send)


def response(
    request: Request, query: EventQuery, still_allowed: Callable[[Request], bool] | None = None
) -> EventSourceResponse:
    """The stream of `query`'s events for `request` (its token already checked; checked
    again every REAUTH_S by `still_allowed`, by default the request's token)."""
    stopping = anyio.Event()  # set by sse-starlette as the server shuts down
    check = _token_still_allowed if still_allowed is None else still_allowed
    return _Response(
        _messages(request, query, stopping, check),
        ping=PING_S,
        send_timeout=SEND_TIMEOUT_S,
        shutdown_event=stopping,
        shutdown_grace_period=SHUTDOWN_GRACE_S,
    )


async def _messages(
    request: Request,
    query: EventQuery,
    stopping: anyio.Event,
    check: Callable[[Request], bool],
) -> AsyncIterator[ServerSentEvent]:
    store, clock = store_of(request), SystemClock()
    paged = dataclasses.replace(query.flt, limit=PAGE_SIZE)
    cursor = sent = query.after  # where the reads stand; the last id the client has
    marked_at = checked_at = clock.monotonic()
    async with request.app.state.wakeups.subscription() as wake:
        relay = asyncio.create_task(_set_when(stopping, wake))
        try:
            while not stopping.is_set():
                wake.clear()  # before reading: a commit after the read wakes the wait
                first = cursor is None
                page = await _read(store, query.flt if first else paged, cursor, stopping)
                if page is None:
                    return
                for event, at in zip(page.events, page.cursors, strict=True):
                    yield ServerSentEvent(_json(event), id=str(at))
                    sent, marked_at = at, clock.monotonic()
                cursor = page.cursor
                if cursor != sent and (first or clock.monotonic() - marked_at >= MARK_EVERY_S):
                    yield ServerSentEvent(id=str(cursor))
                    sent, marked_at = cursor, clock.monotonic()
                if clock.monotonic() - checked_at >= REAUTH_S:
                    if not await _still_allowed(request, check):
                        return
                    checked_at = clock.monotonic()
                await _wait(wake, page, checked_at + REAUTH_S - clock.monotonic())
        finally:
            relay.cancel()


async def _set_when(stopping: anyio.Event, wake: asyncio.Event) -> None:
    """Wake the stream's wait when the server begins to shut down, so it ends at once."""
    await stopping.wait()
    wake.set()


async def _read(
    store: Store, flt: EventFilter, cursor: EventCursor | None, stopping: anyio.Event
) -> EventPage | None:
    """The page after `cursor`, retried while the store is unreachable; None if the
    server begins to shut down meanwhile."""
    retry_s = RETRY_FIRST_S
    while True:
        try:
            page: EventPage = await run_in_threadpool(store.events.events_page, flt, cursor)
        except StoreError:
            with anyio.move_on_after(retry_s):
                await stopping.wait()
            if stopping.is_set():
                return None
            retry_s = min(RETRY_MAX_S, retry_s * 2)
            continue
        return page


async def _wait(wake: asyncio.Event, page: EventPage, longest_s: float) -> None:
    """Until the log may hold more: at once after a full page, soon while events wait
    behind a transaction, else at the next wake-up, or after `longest_s` (the next check
    of the token: a quiet stream checks it too)."""
    if page.pending and len(page.events) >= PAGE_SIZE:
        return
    with anyio.move_on_after(min(PENDING_POLL_S, longest_s) if page.pending else longest_s):
        await wake.wait()


async def _still_allowed(request: Request, check: Callable[[Request], bool]) -> bool:
    """Whether the stream's reader may still read it; an outage of the store is no
    reason to end a stream."""
    try:
        return await run_in_threadpool(check, request)
    except StoreError:
        return True


def _token_still_allowed(request: Request) -> bool:
    """Whether the request's token still holds (not revoked, not expired)."""
    try:
        require(request, store_of(request))
    except Denied:
        return False
    return True


def _json(event: Event) -> str:
    return json.dumps(event.to_dict(), separators=(",", ":"), ensure_ascii=False)
