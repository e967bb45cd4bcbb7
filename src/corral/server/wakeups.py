"""Waking the event streams of one server process when the log may have grown.

However many SSE streams are open, the process has one source of wake-ups, started with
the first stream and stopped with the last:

- PostgreSQL: the store's notification (`store.events.wake_on_events`, one LISTEN session; each
  listening session makes every event-writing commit notify, so one per process, not one
  per stream), plus a read of the log's head every NOTIFIED_POLL_S for a lost one.
- SQLite, which tells no reader of a commit: a read of the log's head every SQLITE_POLL_S
  (one cheap read, `max(id)`), whatever the number of streams.

A stream is woken whenever the head has moved since the last look (the first look
included), so a commit after a stream's read always wakes it: the stream clears its flag
before it reads. The listener's thread reaches the event loop through `_Relay`.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator, Callable

import anyio
from starlette.concurrency import run_in_threadpool

from corral.foundation.errors import StoreError
from corral.model.event_cursors import EventCursor
from corral.runtime.follow import NOTIFIED_POLL_S, SQLITE_POLL_S
from corral.store import Store


class _Relay(threading.Event):
    """A threading.Event the store's listener thread sets; setting it also runs `wake`
    on the event loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, wake: Callable[[], None]) -> None:
        super().__init__()
        self._loop, self._wake = loop, wake

    def set(self) -> None:
        """Set, and wake the streams (a no-op once the loop has closed)."""
        super().set()
        with contextlib.suppress(RuntimeError):  # the loop closed: nobody to wake
            self._loop.call_soon_threadsafe(self._wake)


class EventWakeups:
    """One source of wake-ups shared by the event streams of a process."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._waiters: set[asyncio.Event] = set()
        self._watcher: asyncio.Task[None] | None = None

    @contextlib.asynccontextmanager
    async def subscription(self) -> AsyncIterator[asyncio.Event]:
        """A flag set whenever the log may have grown, until the block ends."""
        flag = asyncio.Event()
        self._waiters.add(flag)
        if self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(self._watch())
        try:
            yield flag
        finally:
            self._waiters.discard(flag)
            if not self._waiters and self._watcher is not None:
                self._watcher.cancel()
                self._watcher = None

    def _wake_all(self) -> None:
        for flag in self._waiters:
            flag.set()

    async def _watch(self) -> None:
        loop = asyncio.get_running_loop()
        relay = _Relay(loop, self._wake_all)
        # On the loop, not in a thread: it only starts the listener's thread (no I/O), and a
        # cancellation while it ran elsewhere would lose the stop of a listener left running.
        stop = self._store.events.wake_on_events(relay)
        poll_s = SQLITE_POLL_S if stop is None else NOTIFIED_POLL_S
        head: EventCursor | None = None
        try:
            while True:
                try:
                    now = await run_in_threadpool(self._store.events.events_head)
                except StoreError:
                    now = None  # away: the streams retry their own reads
                if now is not None and now != head:
                    head = now
                    self._wake_all()
                await anyio.sleep(poll_s)
        finally:
            if stop is not None:  # its stop waits for the listener: not on the loop
                loop.run_in_executor(None, stop)
