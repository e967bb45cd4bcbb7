"""Following the event log: what matches now, then each new event as it commits.

    start ─► the newest `limit` matching events settled now; the cursor past all of them
      ─► loop: the page after the cursor ─► each event handed to `emit` ─► the cursor moves
               on ─► wait: PostgreSQL until its events channel notifies (the fallback poll
               covers a lost notification), SQLite for the poll interval ─► ...
      ─► `stop()` (a signal handler, the orchestrator) ─► `run` returns.

The store's pages never miss or repeat an event (store/events.py), and the cursor lives
here: a read that fails (the server restarts, the connection drops) hands nothing over,
`on_outage` gets one line, and after a wait that doubles up to RETRY_MAX_S the same cursor
is read again. Only the clock waits; `stop()` and notifications cut a wait short.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable

from corral.foundation.clock import Clock
from corral.foundation.errors import StoreError
from corral.model.event_cursors import EventCursor, EventPage
from corral.model.events import Event, EventFilter
from corral.store import Store

# SQLite tells no reader of a commit: a follower polls, one indexed `id > ?` read each
# time (tens of microseconds). 25 ms keeps bench/events_follow.py's p95 well under its
# 100 ms target for a fraction of a percent of a core.
SQLITE_POLL_S = 0.025
NOTIFIED_POLL_S = 1.0  # PostgreSQL: the longest a lost notification can delay an event
# PostgreSQL: committed events wait behind a transaction still running (any of the
# database, which need not write events, so need not notify): read again this soon.
PENDING_POLL_S = 0.005
PAGE_SIZE = 500  # events read at most at once while catching up
RETRY_FIRST_S, RETRY_MAX_S = 0.2, 5.0  # waits between reads while the store is away

Emit = Callable[[Event], None]


class Follower:
    """Tails the events matching `flt` (its `limit`: how many already written to show).

    `listen=False` never asks PostgreSQL for notifications (each listening follower makes
    every event-writing commit notify, which serializes those commits): it polls every
    `poll_s`, for readers that need no haste.
    """

    def __init__(
        self,
        store: Store,
        flt: EventFilter,
        *,
        clock: Clock,
        on_outage: Callable[[str], None],
        poll_s: float | None = None,
        listen: bool = True,
    ) -> None:
        self._store, self._flt, self._clock = store, flt, clock
        self._on_outage, self._poll_s, self._listen = on_outage, poll_s, listen
        self._wake = threading.Event()
        self._stopping = self._catch_up = False
        self._begun: EventPage | None = None

    def begin(self) -> None:
        """Read the starting page now, in the caller's thread, so that "from now on" means
        from this call rather than from whenever `run`'s thread first reads; a store away
        now leaves it to `run`, which retries."""
        try:
            self._begun = self._store.events.events_page(self._flt, None)
        except StoreError:
            self._begun = None

    def stop(self, *, catch_up: bool = False) -> None:
        """End `run` soon (safe from a signal handler or another thread); with `catch_up`,
        after one more read hands over what was committed until now."""
        self._catch_up = catch_up
        self._stopping = True
        self._wake.set()

    def run(self, emit: Emit) -> None:
        """Hand each matching event to `emit`, in cursor order, until `stop()`."""
        stop_listening = self._store.events.wake_on_events(self._wake) if self._listen else None
        default_s = SQLITE_POLL_S if stop_listening is None else NOTIFIED_POLL_S
        poll_s = default_s if self._poll_s is None else self._poll_s
        try:
            self._follow(emit, poll_s)
        finally:
            if stop_listening is not None:
                stop_listening()

    def _follow(self, emit: Emit, poll_s: float) -> None:
        cursor: EventCursor | None = None
        paged = dataclasses.replace(self._flt, limit=PAGE_SIZE)
        begun, self._begun = self._begun, None
        if begun is not None:
            cursor = self._hand_over(begun, emit)
        while True:
            last = self._stopping  # with a catch-up asked, this read is the last
            if last and not self._catch_up:
                return
            self._wake.clear()  # before reading: a commit after the read wakes the wait
            page = self._read(cursor, self._flt if cursor is None else paged)
            if page is None:
                return
            cursor = self._hand_over(page, emit)
            if last:
                return
            if self._stopping:  # asked after the wake-up was cleared: no wait
                continue
            if not page.pending:
                self._clock.wait(self._wake, poll_s)
            elif len(page.events) < PAGE_SIZE:  # a full page: read on at once
                self._clock.wait(self._wake, PENDING_POLL_S)

    @staticmethod
    def _hand_over(page: EventPage, emit: Emit) -> EventCursor:
        """Emit the page's events; the cursor past them."""
        for event in page.events:
            emit(event)
        return page.cursor

    def _read(self, cursor: EventCursor | None, flt: EventFilter) -> EventPage | None:
        """The page after `cursor`; None if it failed and a stop was asked meanwhile."""
        retry_s = RETRY_FIRST_S
        while True:
            try:
                page = self._store.events.events_page(flt, cursor)
            except StoreError as exc:
                if self._stopping:
                    return None
                if retry_s == RETRY_FIRST_S:
                    self._on_outage(f"store unavailable ({exc.message}); retrying")
                self._clock.wait(self._wake, retry_s)
                self._wake.clear()
                if self._stopping:  # not another try, which may wait for a connect timeout
                    return None
                retry_s = min(RETRY_MAX_S, retry_s * 2)
                continue
            if retry_s != RETRY_FIRST_S:
                self._on_outage("store reachable again; following from where it stopped")
            return page
