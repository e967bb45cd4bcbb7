"""The thread-service base (corral.foundation.threads): start, stop, join."""

from __future__ import annotations

import threading

from corral.foundation.threads import ThreadService


class Waiter(ThreadService):
    """Waits on an event of its own that a stop sets (as the spares and checkpoint threads)."""

    def __init__(self) -> None:
        super().__init__("test-waiter")
        self.asked = threading.Event()
        self.ended = threading.Event()

    def _interrupt(self) -> None:
        self.asked.set()

    def _run(self) -> None:
        self.asked.wait()
        self.ended.set()


class Blocked(ThreadService):
    """Blocks where a stop cannot reach it, until released (as the ready listener)."""

    join_on_stop = False

    def __init__(self) -> None:
        super().__init__("test-blocked")
        self.release = threading.Event()

    def _run(self) -> None:
        self.release.wait()


class StopsItself(ThreadService):
    """Stops itself from its own thread (as a heartbeat told its worker is dead)."""

    def __init__(self) -> None:
        super().__init__("test-stops-itself")
        self.done = threading.Event()

    def _run(self) -> None:
        self.stop()
        self.done.set()


def test_stop_interrupts_the_wait_and_returns_once_the_thread_has_ended() -> None:
    """stop() sets `stopping`, calls the interrupt hook, and joins the thread."""
    waiter = Waiter()
    waiter.start()
    waiter.stop()
    assert (True, True) == (waiter.stopping.is_set(), waiter.ended.is_set())
    assert not waiter._thread.is_alive()


def test_a_service_that_may_end_alone_is_not_waited_for() -> None:
    """With join_on_stop False, stop() returns while the thread still runs; join() waits."""
    blocked = Blocked()
    blocked.start()
    blocked.stop()
    assert blocked._thread.is_alive()
    blocked.release.set()
    blocked.join()
    assert not blocked._thread.is_alive()


def test_stop_before_start_and_from_the_thread_itself_return_at_once() -> None:
    """Neither a service never started nor a thread stopping itself waits for a join."""
    Waiter().stop()
    itself = StopsItself()
    itself.start()
    assert itself.done.wait(10)
    itself.join()
    assert itself.stopping.is_set()


def test_threads_are_named_daemons() -> None:
    """A service's thread never keeps the process alive, and says what it is."""
    waiter = Waiter()
    assert ("test-waiter", True) == (waiter._thread.name, waiter._thread.daemon)
