"""The long poll: a claim that found nothing waits for work, held by the server.

The caller reads the work signal's generation (work_signal.py) before its first claim,
and, if that claim found nothing, calls `again`: each time the generation moves (a write
of this server, the store's notification), the claim is tried once more, until it finds
something, `wait_s` passes, the client hangs up or the server stops. No sleep loop: an
idle waiter costs a future and a timer, and a task that becomes ready is claimed within
the signal's delay (at once for this server's writes; a NOTIFY, or SQLite's commit counter
read every few milliseconds, for anyone else's).

A client that hangs up ends its wait at once: the waiter listens for the request's
`http.disconnect` (the body is read by then, so the next message is that one), not by
waking every second to ask, which 200 idle runners would turn into 200 wake-ups a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from corral.server.work_signal import WorkSignal

MAX_WAIT_S = 30.0

T = TypeVar("T")


def signal_of(request: Request) -> WorkSignal:
    """The server's work signal."""
    signal: WorkSignal = request.app.state.work_signal
    return signal


async def again(
    request: Request, attempt: Callable[[], T | None], *, seen: int, wait_s: float
) -> T | None:
    """`attempt` (a blocking claim, run on a worker thread) tried each time the work signal
    moves past `seen`, until it answers something; None once `wait_s` passes, the client
    goes or the server stops: a runner that stopped cut its poll, and its claim must not
    be made for no one."""
    signal = signal_of(request)
    deadline = time.monotonic() + wait_s
    async with _hang_up(request) as gone:
        while not signal.stopping and not gone.done():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if not await signal.wait(seen, left, until=gone):
                continue
            seen = signal.generation
            found = await run_in_threadpool(attempt)
            if found is not None:
                return found
    return None


@contextlib.asynccontextmanager
async def _hang_up(request: Request) -> AsyncIterator[asyncio.Future[Any]]:
    """A future done once the request's client has hung up, for the block's length."""
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        yield gone
    finally:
        gone.cancel()


async def _disconnected(request: Request) -> None:
    while (await request.receive())["type"] != "http.disconnect":
        pass
