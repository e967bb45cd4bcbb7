"""Retry decisions: pure functions of the attempt count, the policy and an injected rng.

Delays grow as base * 2**(attempt-1), capped at `max_s`, then spread by ±jitter so that
tasks failing together do not retry together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: keeps these off the CLI's import path
    import random

    from corral.foundation.policies import RetryPolicy


@dataclass(frozen=True, slots=True)
class Retry:
    """Return the task to ready after `delay_s`."""

    delay_s: float


@dataclass(frozen=True, slots=True)
class GiveUp:
    """Fail the task for good, for `reason` (error, poison, lease_expired, crashed)."""

    reason: str


Outcome = Retry | GiveUp


def delay_s(attempt: int, base_s: float, policy: RetryPolicy, rng: random.Random) -> float:
    """Seconds to wait before attempt `attempt + 1`, after `attempt` failed."""
    raw = min(policy.max_s, base_s * 2.0 ** max(0, attempt - 1))
    spread = raw * policy.jitter * rng.uniform(-1.0, 1.0)
    return max(0.0, min(policy.max_s, raw + spread))


def after_failure(
    *, attempts: int, max_attempts: int, base_s: float, policy: RetryPolicy, rng: random.Random
) -> Outcome:
    """Retry while attempts remain, else give up with reason `error`."""
    if attempts >= max_attempts:
        return GiveUp("error")
    return Retry(delay_s(attempts, base_s, policy, rng))


def after_crash(
    *,
    attempts: int,
    max_attempts: int,
    crashes: int,
    max_crashes: int,
    base_s: float,
    policy: RetryPolicy,
    rng: random.Random,
) -> Outcome:
    """After a lost lease: quarantine as `poison` at max_crashes, else treat as a failure.

    The first crash is retried at once: as far as anyone knows the worker died, not the
    task, and the task is better run again now than after a backoff. From the second crash
    on, the task itself comes under suspicion, and the backoff applies.
    """
    if crashes + 1 >= max_crashes:
        return GiveUp("poison")
    if attempts >= max_attempts:
        return GiveUp("crashed")
    if crashes == 0:
        return Retry(0.0)
    return Retry(delay_s(attempts, base_s, policy, rng))
