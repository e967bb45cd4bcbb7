"""`Every`: call a function each time an interval has passed, on the injected clock.

The orchestrator's loops (running, and draining its pool) wait for the earliest of
several due times (the next reconcile pass, the next beat, the pool's next restart or
kill), then do what is due. Each `Every` keeps one of those times:

    reconciles = Every(interval_s, role.on_interval, clock=clock, first_s=interval_s)
    loop: clock.wait(wake, until the earliest `due_at`) ─► reconciles.run_if_due() ...

`run_if_due` calls the function when its time has come and schedules the next call one
interval after it looked, so a late or long call never makes calls pile up. The interval
may be a function, asked after each call (a beat comes sooner while a worker has yet to
register); `force` calls it early (a beat right after the pool changed). Time is the
clock's monotonic seconds; nothing here sleeps. `bring_forward` makes a call due sooner
(a beat that probes a store found out, a pass at once when it is back).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from corral.foundation.clock import Clock

T = TypeVar("T")


class Every(Generic[T]):
    """`fn` every `interval_s` seconds, the first time `first_s` seconds from now."""

    def __init__(
        self,
        interval_s: float | Callable[[], float],
        fn: Callable[[], T],
        *,
        clock: Clock,
        first_s: float,
    ) -> None:
        self._interval_s, self._fn, self._clock = interval_s, fn, clock
        self.due_at = clock.monotonic() + first_s  # monotonic

    def run_if_due(self, *, force: bool = False) -> T | None:
        """Call `fn` if it is due (or `force`) and schedule the next call; what `fn`
        returned, or None if it was not called."""
        now = self._clock.monotonic()
        if not force and now < self.due_at:
            return None
        result = self._fn()
        interval = self._interval_s
        self.due_at = now + (interval() if callable(interval) else interval)
        return result

    def bring_forward(self, in_s: float) -> None:
        """Make the next call due no later than `in_s` seconds from now."""
        self.due_at = min(self.due_at, self._clock.monotonic() + in_s)
