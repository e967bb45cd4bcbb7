"""Figures that cost a pass over the tasks, read at most once a second and only when the
event log says something changed: what the overview shows of the tasks.

Counting the tasks by queue, kind and status and listing the reviews waiting read every
task (100,000 tasks: 20 to 60 ms, growing with the table), while a page should cost the
same whatever the table holds (issue 18). A counts table kept by every state change would
put one more row write, the same few rows for every claim, into the claim's transaction;
this keeps the writes as they are and moves the pass out of the page instead.

A `Snapshot` hands out the figures it last read, stamped with the event log's head at the
time. A request that finds the head moved since is answered from the figures held and
starts one refresh in a thread, no sooner than `min_interval_s` after the last: a busy
fleet costs one pass a second while someone watches, an idle one none. The page says
whether its figures are current (`Reading.current`); one that is not asks to be loaded
again shortly (overview.html), so the last change before a quiet spell still shows. A
page opened (`get(fresh=True)`) waits for figures as new as the log: its figures are
current when it opens, at the cost of one pass when the log moved since the last; the
live region's fetches, which a busy fleet makes every second, never wait.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from corral.foundation.clock import SystemClock

T = TypeVar("T")
log = logging.getLogger(__name__)


def _in_a_thread(work: Callable[[], None]) -> None:
    threading.Thread(target=work, name="dashboard-snapshot", daemon=True).start()


@dataclass(frozen=True, slots=True)
class Reading(Generic[T]):
    """Figures and whether they are of the log's head as it is now."""

    value: T
    current: bool


class Snapshot(Generic[T]):
    """The last figures `read` returned, refreshed in a thread when `head` moves."""

    def __init__(
        self,
        read: Callable[[], T],
        head: Callable[[], Hashable],
        *,
        min_interval_s: float = 1.0,
        clock: Callable[[], float] | None = None,  # monotonic seconds
        spawn: Callable[[Callable[[], None]], object] = _in_a_thread,
    ) -> None:
        self._read, self._head, self._spawn = read, head, spawn
        self._clock = SystemClock().monotonic if clock is None else clock
        self._min_interval_s = min_interval_s
        self._lock = threading.Lock()
        self._reading = threading.Lock()  # held while the figures are read: one read at a time
        self._held: tuple[Hashable, float, T] | None = None  # (head, read at, figures)
        self._refreshing = False

    def get(self, *, fresh: bool = False) -> Reading[T]:
        """The figures held (read now if none is); a refresh started if they are behind.
        With `fresh`, figures behind the head are read again now, in the caller's thread."""
        head = self._head()
        if fresh:
            return self._fresh(head)
        with self._lock:
            held = self._held
            due = held is not None and held[0] != head and self._due(held[1])
            if due:
                self._refreshing = True
        if due:

            def refresh() -> None:
                self._refresh(unless_at=head)  # a page opened meanwhile may have read it

            self._spawn(refresh)
        if held is None:
            self._refresh()
            held = self._held
            assert held is not None
        return Reading(value=held[2], current=held[0] == head)

    def _due(self, read_at: float) -> bool:
        return not self._refreshing and self._clock() - read_at >= self._min_interval_s

    def _fresh(self, head: Hashable) -> Reading[T]:
        """The figures of `head` or later: read now unless those held are of `head` (or a
        read that waited for another's finds them so)."""
        current = self._refresh(unless_at=head)
        held = self._held
        assert held is not None  # a first read that failed raised
        return Reading(value=held[2], current=current)

    def _refresh(self, unless_at: Hashable | None = None) -> bool:
        """Read the figures, the head first: a change made meanwhile leaves them behind
        the next head, so the next request refreshes again. One read at a time; none
        when those held are of `unless_at`. Whether the figures held are now as new."""
        with self._reading:
            try:
                return self._read_unless(unless_at)
            finally:
                with self._lock:
                    self._refreshing = False

    def _read_unless(self, unless_at: Hashable | None) -> bool:
        held = self._held
        if unless_at is not None and held is not None and held[0] == unless_at:
            return True
        try:
            head = self._head()
            started = self._clock()
            value = self._read()
        except Exception:  # keep the figures held: the next request retries
            if held is None:
                raise
            log.exception("dashboard snapshot: reading the figures failed")
            return False
        with self._lock:
            self._held = (head, started, value)
        return True
