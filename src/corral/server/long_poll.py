"""The long poll: a claim that found nothing waits for work, held by the server.

The caller reads the work signal's generation (work_signal.py) before its first claim,
and, if that claim found nothing, calls `again`: each time the generation moves (a write
of this server, the store's notification), the claim is tried once more, until it finds
something, `wait_s` passes, the client hangs up or the server stops. No sleep loop: an
idle waiter costs a future and a timer, and a task that becomes ready is claimed within
the signal's delay (at once for this server's writes; a NOTIFY, or SQLite's commit counter
read every few milliseconds, for anyone else's).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from corral.server.work_signal import WorkSignal

MAX_WAIT_S = 30.0
# How often a waiter looks whether its client is still there: a runner that stopped cut
# its poll, and its claim must not be made for no one.
CLIENT_CHECK_S = 1.0

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
    goes or the server stops."""
    signal = signal_of(request)
    deadline = time.monotonic() + wait_s
    while not signal.stopping:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        if not await signal.wait(seen, min(left, CLIENT_CHECK_S)):
            if await request.is_disconnected():
                break
            continue
        seen = signal.generation
        found = await run_in_threadpool(attempt)
        if found is not None:
            return found
    return None
