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
