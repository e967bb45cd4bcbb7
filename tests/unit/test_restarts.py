"""The restart policy: delays double to the cap, a long uptime resets them, max_restarts fails."""

from __future__ import annotations

import pytest

from corral.foundation.settings import Settings
from corral.model.restarts import RestartHistory, after_exit, restart_delay_s

POLICY = Settings(restart_delay_s=1, max_restart_delay_s=8, max_restarts=5, min_uptime_s=10).process


@pytest.mark.parametrize(
    ("streak", "delay"), [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (5, 8.0), (30, 8.0)]
)
def test_the_delay_doubles_from_restart_delay_up_to_the_cap(streak, delay):
    """restart_delay * 2**(streak-1), never above max_restart_delay."""
    assert delay == restart_delay_s(streak, POLICY)


def test_quick_exits_in_a_row_grow_the_delay_and_count_every_restart():
    """Each exit before min_uptime adds to the streak; total counts them all."""
    history, delays = RestartHistory(), []
    for _ in range(4):
        decision = after_exit(history, 0.5, POLICY)
        history = decision.history
        delays.append(decision.delay_s)
        assert not decision.failed
    assert [1.0, 2.0, 4.0, 8.0] == delays
    assert RestartHistory(streak=4, total=4) == history


def test_a_worker_up_for_min_uptime_resets_the_delay():
    """After running min_uptime_s, the next restart waits restart_delay again."""
    decision = after_exit(RestartHistory(streak=4, total=9), 10.0, POLICY)
    assert (1.0, False) == (decision.delay_s, decision.failed)
    assert RestartHistory(streak=1, total=10) == decision.history


def test_past_max_restarts_the_slot_fails_and_is_replaced_after_the_cap_delay():
    """Restart max_restarts+1 in a row fails the slot; its replacement starts a fresh streak."""
    decision = after_exit(RestartHistory(streak=5, total=5), 0.1, POLICY)
    assert (True, 8.0) == (decision.failed, decision.delay_s)
    assert RestartHistory(streak=0, total=6) == decision.history
    fresh = after_exit(decision.history, 0.1, POLICY)
    assert (False, 1.0) == (fresh.failed, fresh.delay_s)


def test_zero_max_restarts_fails_the_slot_at_its_first_exit():
    """max_restarts 0: no restart in a row is allowed."""
    policy = Settings(max_restarts=0).process
    assert after_exit(RestartHistory(), 0.0, policy).failed


@pytest.mark.parametrize("max_restarts", [0, 5])
def test_a_clean_exit_is_no_crash_however_quick_and_however_many(max_restarts):
    """Exit 0 (`--max-tasks` reached): the first delay, the streak reset, never a failed slot."""
    policy = Settings(restart_delay_s=1, max_restarts=max_restarts, min_uptime_s=10).process
    history = RestartHistory(streak=4, total=9)
    for total in range(10, 30):
        decision = after_exit(history, 0.1, policy, clean=True)
        assert (False, 1.0) == (decision.failed, decision.delay_s)
        history = decision.history
        assert RestartHistory(streak=0, total=total) == history
