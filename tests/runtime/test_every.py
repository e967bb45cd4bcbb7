"""`Every` (corral.runtime.pool.every): the orchestrator loops' schedules, on a fake clock."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from corral import FakeClock
from corral.runtime.pool.every import Every


def test_the_function_runs_once_its_time_has_come_then_one_interval_later() -> None:
    """Not before `first_s`; then every `interval_s` from when it was last looked at."""
    clock, calls = FakeClock(), []
    every = Every(10.0, lambda: calls.append(clock.monotonic()), clock=clock, first_s=5.0)
    assert None is every.run_if_due()
    clock.advance(5.0)
    every.run_if_due()
    clock.advance(9.0)
    every.run_if_due()
    clock.advance(1.0)
    every.run_if_due()
    assert ([5.0, 15.0], 25.0) == (calls, every.due_at)


def test_a_late_look_runs_it_once_and_schedules_from_then() -> None:
    """Three intervals overdue is one call, not three: calls never pile up."""
    clock, calls = FakeClock(), []
    every = Every(1.0, lambda: calls.append(1), clock=clock, first_s=1.0)
    clock.advance(3.5)
    every.run_if_due()
    every.run_if_due()
    assert ([1], 4.5) == (calls, every.due_at)


def test_force_runs_it_early_and_the_interval_is_asked_after_each_call() -> None:
    """A forced call returns the function's result; a function interval is read after it."""
    clock = FakeClock()
    interval = [0.25]
    every = Every(lambda: interval[0], lambda: "beat", clock=clock, first_s=0.0)
    assert ("beat", 0.25) == (every.run_if_due(), every.due_at)
    interval[0] = 5.0
    assert ("beat", 5.0) == (every.run_if_due(force=True), every.due_at)


def test_bring_forward_makes_it_due_sooner_never_later() -> None:
    """A call due in 10 s brought forward to 2 s runs at 2 s; to 5 s then, it stays at 2 s."""
    clock, calls = FakeClock(), []
    every = Every(10.0, lambda: calls.append(clock.monotonic()), clock=clock, first_s=10.0)
    every.bring_forward(2.0)
    every.bring_forward(5.0)
    clock.advance(2.0)
    every.run_if_due()
    assert ([2.0], 12.0) == (calls, every.due_at)
