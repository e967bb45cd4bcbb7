"""Stop signals of the runtime's long-running processes (the runner, the orchestrator, the
followers of the CLI).

Each installs its handlers for the span of its run and restores the previous ones after
(so a late signal cannot cut its cleanup short). Only the main thread may install
handlers: run on another thread (a test, an embedding program), a runner or orchestrator
installs none, and is stopped by calling its `stop()` / `request_stop()`.

A Python signal handler runs in the main thread between any two of its bytecodes, inside
a `with lock:` of that thread's own too: `threading.Event.wait` and `set` each hold one
for a moment, and so does a write to stderr. A handler that sets an Event the main thread
waits on, or logs, can so wait forever for a lock its own thread holds (a CI run's
`events --follow` hung on SIGTERM so), or find stderr busy ("reentrant call"). `relayed`
therefore runs the handler on a thread of its own: the handler it installs only writes the
signal's number to a pipe, a system call that takes no lock, and the relay thread reads
it and calls the real one, where taking a lock merely waits its turn. `handled` runs the
handler in the main thread, for those that must raise there (the status screen's).
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
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


@contextmanager
def relayed(signals: tuple[signal.Signals, ...], handler: Handler) -> Iterator[None]:
    """Handle `signals` with `handler`, called on a relay thread (module docstring) with no
    frame, inside the block (from the main thread only). `handler` must not raise."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)  # a full pipe loses a signal, never blocks the handler

    def on_signal(signum: int, frame: FrameType | None) -> None:
        with suppress(BlockingIOError):
            os.write(write_fd, bytes([signum]))

    def relay() -> None:
        while received := os.read(read_fd, 64):  # empty once the block has ended
            for signum in received:
                handler(signum, None)

    thread = threading.Thread(target=relay, name="corral-signals", daemon=True)
    thread.start()
    try:
        with handled(signals, on_signal):
            yield
    finally:  # the handlers restored first: none writes to a closed pipe
        os.close(write_fd)
        thread.join()
        os.close(read_fd)
