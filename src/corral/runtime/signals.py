"""Stop signals of the runtime's long-running processes (the runner, the orchestrator).

Each installs its handlers for the span of its run and restores the previous ones after
(so a late signal cannot cut its cleanup short). Only the main thread may install
handlers: run on another thread (a test, an embedding program), a runner or orchestrator
installs none, and is stopped by calling its `stop()` / `request_stop()`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

Handler = Callable[[int, FrameType | None], None]


@contextmanager
def handled(signals: tuple[signal.Signals, ...], handler: Handler) -> Iterator[None]:
    """Handle `signals` with `handler` inside the block (from the main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
