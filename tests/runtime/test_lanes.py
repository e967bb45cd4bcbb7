"""The slot loop's task budget (corral.runtime.worker.lanes.Budget): --once and --max-tasks.

The loop itself runs in real processes: test_runner.py and test_batch_runner.py.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from corral.runtime.worker.lanes import Budget


def test_the_budget_grants_what_is_left_and_takes_back_what_was_not_claimed() -> None:
    """--max-tasks 3: a slot asking for 2 twice gets 2 then 1; a claim short of it gives back."""
    budget = Budget(3)
    assert [2, 1, 0] == [budget.reserve(2), budget.reserve(2), budget.reserve(1)]
    budget.give_back(1)
    assert (2, 1) == (budget.taken, budget.reserve(5))
    assert 64 == Budget(None).reserve(64)
