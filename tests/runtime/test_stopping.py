"""A runner's stop (corral.runtime.worker.stopping), on a fake clock."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import threading

from corral import FakeClock
from corral.runtime.worker.stopping import Stopping


def test_a_stop_wakes_idle_slots_and_lets_running_tasks_finish_within_the_timeout() -> None:
    """Asked once: claiming stops at once; running tasks must stop once the timeout is over."""
    clock, wake = FakeClock(), threading.Event()
    stopping = Stopping(clock=clock, timeout_s=10.0, wake=wake)
    assert (False, False) == (stopping.asked, stopping.overdue())
    stopping.ask()
    assert (True, False, True) == (stopping.asked, stopping.overdue(), wake.is_set())
    clock.advance(9.9)
    assert not stopping.overdue()
    clock.advance(0.1)
    assert stopping.overdue()


def test_a_second_stop_or_an_immediate_one_stops_running_tasks_now() -> None:
    """SIGQUIT (immediate) or a second SIGTERM leaves running tasks no more time."""
    first = Stopping(clock=FakeClock(), timeout_s=10.0, wake=threading.Event())
    first.ask(immediate=True)
    again = Stopping(clock=FakeClock(), timeout_s=10.0, wake=threading.Event())
    again.ask()
    again.ask()
    assert (True, True) == (first.overdue(), again.overdue())


def test_a_second_signal_inside_the_first_ones_ask_stops_running_tasks_now() -> None:
    """A second signal's handler can run between any two bytecodes of the first's `ask`:
    simulated by a clock that asks again the first time it is read, from inside `ask`. The
    nested ask neither waits for a lock the interrupted one holds nor is lost: the stop is
    immediate."""
    ran = threading.Event()

    class Interrupting(FakeClock):
        nested = False

        def monotonic(self) -> float:
            if not self.nested:
                self.nested = True
                stopping.ask()  # the second signal's handler
            return super().monotonic()

    stopping = Stopping(clock=Interrupting(), timeout_s=10.0, wake=threading.Event())

    def first_signal() -> None:
        stopping.ask()
        ran.set()

    threading.Thread(target=first_signal, daemon=True).start()  # a deadlock must not hang us
    assert ran.wait(10)
    assert (True, True) == (stopping.asked, stopping.overdue())
