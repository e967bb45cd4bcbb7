"""When work may have become ready: what wakes the claims that long-poll the server.

A claim that finds nothing waits here (`wait`) until the signal's generation moves on or
its time is up, then claims again. The generation moves on

- at once, after every write this server makes (`notify`, called by the routes);
- on PostgreSQL, when the store NOTIFYs that a task became ready, whoever wrote it
  (another `corral serve`, a local runner, `corral add` on the database's host);
- on SQLite, which notifies no one, when the database's `data_version` changes: one
  thread reads that counter every COMMIT_POLL_S on a connection of its own, a few
  microseconds a read, whatever the number of waiting workers.

A waiter reads the generation before it claims and waits only if it is unchanged, so a
task made ready between its claim and its wait is never missed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from corral.store import Store

COMMIT_POLL_S = 0.005


class WorkSignal:
    """A generation counter that wakes waiting claims, fed by this server and the store."""

    def __init__(self) -> None:
        self.generation = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: set[asyncio.Future[None]] = set()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._unlisten: Callable[[], None] | None = None

    def start(self, store: Store) -> None:
        """Begin watching `store` from the running event loop's thread."""
        self._loop = asyncio.get_running_loop()
        if store.dialect == "postgresql":
            wake = threading.Event()
            self._unlisten = store.wake_on_work(wake)
            self._spawn(self._relay, wake)
        elif store.dialect == "sqlite":
            from corral.store.sqlite import commit_counter  # noqa: PLC0415

            self._spawn(self._poll, commit_counter(store.url))

    def stop(self) -> None:
        """Stop watching, and wake every waiter (the server is going)."""
        self._stop.set()
        if self._unlisten is not None:
            self._unlisten()
        for thread in self._threads:
            thread.join(timeout=1.0)
        self._bump()

    def notify(self) -> None:
        """Work may be ready: move the generation on (from any thread)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._bump)

    async def wait(self, seen: int, timeout_s: float) -> bool:
        """Wait until the generation is past `seen` (True) or `timeout_s` passes (False)."""
        if self.generation != seen or self._stop.is_set():
            return True
        assert self._loop is not None
        future: asyncio.Future[None] = self._loop.create_future()
        self._waiters.add(future)
        try:
            await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            return False
        finally:
            self._waiters.discard(future)
        return True

    @property
    def stopping(self) -> bool:
        """Whether the server is shutting down (waiters return at once)."""
        return self._stop.is_set()

    def _bump(self) -> None:
        self.generation += 1
        waiters, self._waiters = self._waiters, set()
        for future in waiters:
            if not future.done():
                future.set_result(None)

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, name="corral-work-signal", daemon=True)
        thread.start()
        self._threads.append(thread)

    def _relay(self, wake: threading.Event) -> None:
        """PostgreSQL: each NOTIFY the store's listener delivers moves the generation on."""
        while not self._stop.is_set():
            if wake.wait(0.5):
                wake.clear()
                self.notify()

    def _poll(self, counter: Callable[[], int | None]) -> None:
        """SQLite: a change of the database's commit counter moves the generation on."""
        last = counter()
        while not self._stop.wait(COMMIT_POLL_S):
            now = counter()
            if now != last:
                last = now
                self.notify()
