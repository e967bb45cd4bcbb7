"""Thread services: one daemon thread doing one job until asked to stop.

corral's background threads (a runner's heartbeat and spare output files, the SQLite
store's checkpointer, the PostgreSQL store's ready listener) share one shape, River's
start-stop services in Python:

    start() ─► the thread runs `_run()`, which returns once `stopping` is set
    stop()  ─► `stopping` set, `_interrupt()` cuts short whatever the thread waits on,
               then the thread is joined (unless the service says it may end alone)

The threads are daemons: a process that exits (or is killed) never waits for them, so
none may hold anything that must be saved. A `_run` waits on `stopping`, or on an event
that `_interrupt` sets, so a stop is seen at once; a timed wait goes through a `Clock`.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from typing import ClassVar


class ThreadService(ABC):
    """A daemon thread named `name`, with start, stop and join; subclasses write `_run`."""

    # False for a thread that may block, for a bounded time, where `_interrupt` cannot
    # reach it, that holds nothing to save, and that its owner must not wait for (say why).
    join_on_stop: ClassVar[bool] = True

    def __init__(self, name: str) -> None:
        self.stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        """Start the thread."""
        self._thread.start()

    def stop(self) -> None:
        """Ask the thread to end and, unless `join_on_stop` is False, wait until it has."""
        self.ask_to_stop()
        if self.join_on_stop:
            self.join()

    def ask_to_stop(self) -> None:
        """Ask the thread to end without waiting: an owner of several asks them all first,
        then joins each, so their last pieces of work end together rather than in turn."""
        self.stopping.set()
        self._interrupt()

    def join(self) -> None:
        """Wait for the thread to end; at once if it never started, or if it asks itself."""
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join()

    def _interrupt(self) -> None:  # noqa: B027 - a hook: most threads have no other wait
        """Cut short a wait of the thread's that `stopping` does not end (none by default)."""

    @abstractmethod
    def _run(self) -> None:
        """The thread's work; returns once `stopping` is set."""
