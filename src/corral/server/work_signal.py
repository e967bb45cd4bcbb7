"""When work may have become ready: what wakes the claims that long-poll the server.

A claim that finds nothing waits here (`wait`) until the signal's generation moves on or
its time is up, then claims again. The generation moves on

- at once, after every write this server makes (`notify`, called by the routes);
- on PostgreSQL, when the store NOTIFYs that a task became ready, whoever wrote it
  (another `corral serve`, a local runner, `corral add` on the database's host);
- on SQLite, which notifies no one, when the database's `data_version` changes and the
  event log's head moved with it: one thread reads that counter every COMMIT_POLL_S on a
  connection of its own, a few microseconds a read, whatever the number of waiting
  workers, and only while a claim waits (a busy server's runners never wait; the first
  read after a pause compares with the last before it, so no commit goes unseen). Every
  change that can make a task claimable writes an event in its transaction; a commit that
  wrote none (a heartbeat, a run's progress) wakes no one;
- on either store, when the soonest ready task waiting for its `run_after` (a delay, a
  retry's backoff, a deferral) comes due, which no write marks: one thread reads that
  time (`next_run_after`) while a claim waits, again whenever the generation moves, and
  sleeps until it (at most DUE_CHECK_S, so a clock that jumps is caught up with).

A waiter reads the generation before it claims and waits only if it is unchanged, so a
task made ready between its claim and its wait is never missed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from corral.foundation.errors import StoreError
from corral.store import Store

COMMIT_POLL_S = 0.005
DUE_CHECK_S = 30.0


class WorkSignal:
    """A generation counter that wakes waiting claims, fed by this server and the store."""

    def __init__(self) -> None:
        self.generation = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiters: set[asyncio.Future[None]] = set()
        self._stop = threading.Event()
        self._watched = threading.Event()  # a claim waits: the SQLite poll runs
        self._threads: list[threading.Thread] = []
        self._unlisten: Callable[[], None] | None = None
        self._moved = threading.Event()  # the generation moved: the due time is read again

    def start(self, store: Store) -> None:
        """Begin watching `store` from the running event loop's thread."""
        self._loop = asyncio.get_running_loop()
        if store.dialect == "postgresql":
            wake = threading.Event()
            self._unlisten = store.wake_on_work(wake)
            self._spawn(self._relay, wake)
        elif store.dialect == "sqlite":
            from corral.store.sqlite import commit_counter  # noqa: PLC0415

            self._spawn(self._poll, commit_counter(store.url), store.events.events_head)
        self._spawn(self._due, store)

    def stop(self) -> None:
        """Stop watching, and wake every waiter (the server is going)."""
        self._stop.set()
        self._watched.set()
        self._moved.set()
        if self._unlisten is not None:
            self._unlisten()
        for thread in self._threads:
            thread.join(timeout=1.0)
        self._bump()

    def notify(self) -> None:
        """Work may be ready: move the generation on (from any thread)."""
        if self._loop is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._bump)

    async def wait(
        self, seen: int, timeout_s: float, *, until: asyncio.Future[Any] | None = None
    ) -> bool:
        """Wait until the generation is past `seen` (True), or `timeout_s` passes or `until`
        is done first (False)."""
        if self.generation != seen or self._stop.is_set():
            return True
        assert self._loop is not None
        future: asyncio.Future[None] = self._loop.create_future()
        self._waiters.add(future)
        self._watched.set()
        try:
            waited = {future} if until is None else {future, until}
            await asyncio.wait(waited, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self._waiters.discard(future)
        return future.done()

    @property
    def stopping(self) -> bool:
        """Whether the server is shutting down (waiters return at once)."""
        return self._stop.is_set()

    def _bump(self) -> None:
        self.generation += 1
        self._moved.set()
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

    def _poll(self, counter: Callable[[], int | None], head: Callable[[], object]) -> None:
        """SQLite: a commit (the counter changed) that moved the event log's head moves the
        generation on; a head that cannot be read counts as moved."""
        last, last_head = counter(), _read(head)
        while not self._stop.wait(COMMIT_POLL_S):
            self._until_watched()
            now = counter()
            if now == last:
                continue
            last, now_head = now, _read(head)
            if now_head is None or now_head != last_head:
                last_head = now_head
                self.notify()

    def _due(self, store: Store) -> None:
        """Any store: the generation moves on when a waiting task's `run_after` passes."""
        while not self._stop.is_set():
            self._until_watched()
            self._moved.clear()
            if self._stop.is_set():  # a stop that set `_moved` before the clear: not missed
                return
            try:
                due, now = store.tasks.next_run_after(), store.now()
            except StoreError:
                due, now = None, None
            wait_s = DUE_CHECK_S
            if due is not None and now is not None:
                wait_s = min(DUE_CHECK_S, max(0.0, (due - now).total_seconds()))
            if not self._moved.wait(wait_s) and due is not None and not self._stop.is_set():
                self.notify()  # its time came with no write: the waiting claims try again

    def _until_watched(self) -> None:
        """Return at once while a claim waits; otherwise when one starts to (or at stop).
        The set of waiters is the event loop's: its length is read whole, under the GIL."""
        if self._waiters:
            return
        self._watched.clear()
        # A waiter that came before the clear has set it again; a stop sets `_stop` before
        # `_watched`, so one whose set this clear undid is seen here.
        if not self._waiters and not self._stop.is_set():
            self._watched.wait()


def _read(head: Callable[[], object]) -> object | None:
    """The event log's head, or None while the store cannot be read."""
    try:
        return head()
    except StoreError:
        return None
