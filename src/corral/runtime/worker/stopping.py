"""A runner's stop: asked from the main thread (a signal, `Runner.stop()`), read by its lanes.

    first SIGTERM / SIGINT, or stop() ─► asked: claim nothing more; running tasks may
        finish within shutdown_timeout_s
    a second one, SIGQUIT, stop(immediate=True), or the timeout ─► overdue: running
        tasks are stopped now, and given back
Asking sets the runner's wake event, so a lane waiting for work sees the stop at once, and
calls `on_ask` (the store's `stop_waiting`: a claim long-polling a server ends too).

`ask` takes no lock of its own: it runs in signal handlers, and a second signal can
interrupt the handler of the first between any two of its bytecodes. A lock held there
would be taken again by the same thread and never given back. Each ask draws a number
from a counter (one C call, which no handler interrupts) instead: any after the first is
a second signal.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable

from corral.foundation.clock import Clock


class Stopping:
    """Whether, since when and how urgently this runner was asked to stop."""

    def __init__(
        self,
        *,
        clock: Clock,
        timeout_s: float,
        wake: threading.Event,
        on_ask: Callable[[], None] = lambda: None,
    ) -> None:
        self._clock, self._timeout_s, self._wake, self._on_ask = clock, timeout_s, wake, on_ask
        self._asks = itertools.count()
        self._asked_at: float | None = None  # monotonic
        self._immediate = False

    def ask(self, *, immediate: bool = False) -> None:
        """Stop claiming; with `immediate`, or asked a second time, stop running tasks now."""
        if next(self._asks) > 0 or immediate:
            self._immediate = True
        if self._asked_at is None:
            self._asked_at = self._clock.monotonic()
        self._wake.set()
        self._on_ask()

    @property
    def asked(self) -> bool:
        """True once a stop was asked."""
        return self._asked_at is not None

    def overdue(self) -> bool:
        """True when running tasks must stop now: asked to, or the shutdown timeout ran out."""
        if self._immediate:
            return True
        asked_at = self._asked_at
        return asked_at is not None and self._clock.monotonic() - asked_at >= self._timeout_s
