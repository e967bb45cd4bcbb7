"""Restart decisions for a pool slot whose worker exited: pure functions of its history.

    exit 0 (clean: --max-tasks reached, drained) ──► restart after restart_delay, streak 0
    exit ──uptime ≥ min_uptime──► streak reset to 0
         ──streak + 1 ≤ max_restarts──► restart after restart_delay * 2**(streak), capped
         ──streak + 1 > max_restarts──► slot failed; a fresh worker after max_restart_delay

`streak` counts restarts in a row without a worker staying up `min_uptime_s`; `total`
counts every restart the slot has made, for `orchestrator status`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.foundation.records import record

if TYPE_CHECKING:  # annotations only: keeps settings off the CLI's import path
    from corral.foundation.policies import ProcessPolicy


@record(frozen=True, slots=True, kw_only=True)
class RestartHistory:
    """What a slot remembers of its worker's exits."""

    streak: int = 0
    total: int = 0


@record(frozen=True, slots=True, kw_only=True)
class RestartDecision:
    """Start a worker again after `delay_s`; `failed` when the slot hit max_restarts."""

    delay_s: float
    failed: bool
    history: RestartHistory


def restart_delay_s(streak: int, policy: ProcessPolicy) -> float:
    """The delay before restart number `streak` in a row (1 is the first): doubling, capped."""
    raw = policy.restart_delay_s * 2.0 ** max(0, streak - 1)
    return min(policy.max_restart_delay_s, raw)


def after_exit(
    history: RestartHistory, uptime_s: float, policy: ProcessPolicy, *, clean: bool = False
) -> RestartDecision:
    """What to do once a slot's worker exited unasked after running `uptime_s`.

    A `clean` exit (status 0: its `--max-tasks` reached, or drained) is no crash: a fresh
    worker starts after the first delay, and the streak starts again.
    """
    if clean:
        return RestartDecision(
            delay_s=restart_delay_s(1, policy),
            failed=False,
            history=RestartHistory(streak=0, total=history.total + 1),
        )
    streak = 0 if uptime_s >= policy.min_uptime_s else history.streak
    streak += 1
    if streak > policy.max_restarts:
        return RestartDecision(
            delay_s=policy.max_restart_delay_s,
            failed=True,
            history=RestartHistory(streak=0, total=history.total + 1),
        )
    return RestartDecision(
        delay_s=restart_delay_s(streak, policy),
        failed=False,
        history=RestartHistory(streak=streak, total=history.total + 1),
    )
