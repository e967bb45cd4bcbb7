"""Retry decisions: backoff delays, jitter bounds, retry or give up."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import random

import pytest

from corral.foundation.policies import RetryPolicy
from corral.model.backoff import GiveUp, Retry, after_crash, after_failure, delay_s

POLICY = RetryPolicy(max_attempts=3, base_s=10.0, max_s=3600.0, jitter=0.0)


@pytest.mark.parametrize(
    ("attempt", "expected_s"),
    [
        (0, 10.0),
        (1, 10.0),
        (2, 20.0),
        (3, 40.0),
        (4, 80.0),
        (9, 2560.0),
        (10, 3600.0),
        (60, 3600.0),
    ],
)
def test_delay_doubles_per_attempt_up_to_the_cap(attempt: int, expected_s: float) -> None:
    """Without jitter the delay is base * 2**(attempt-1), never above max_s."""
    assert expected_s == delay_s(attempt, 10.0, POLICY, random.Random(0))


def test_delay_uses_the_task_base_not_the_policy_base() -> None:
    """The base passed in (the task's own) drives the delay."""
    assert 6.0 == delay_s(2, 3.0, POLICY, random.Random(0))


def test_a_zero_base_retries_at_once() -> None:
    """retry_base_s = 0 means no wait."""
    assert 0.0 == delay_s(5, 0.0, POLICY, random.Random(0))


@pytest.mark.parametrize("jitter", [0.1, 0.2, 0.5, 1.0])
def test_jitter_stays_within_its_bounds(jitter: float) -> None:
    """With jitter j each delay lies in raw * [1-j, 1+j], capped at max_s, and never below 0."""
    policy = RetryPolicy(max_attempts=3, base_s=10.0, max_s=300.0, jitter=jitter)
    rng = random.Random(1234)
    for attempt in range(1, 12):
        raw = min(300.0, 10.0 * 2 ** (attempt - 1))
        delays = [delay_s(attempt, 10.0, policy, rng) for _ in range(200)]
        assert all(raw * (1 - jitter) <= d <= min(300.0, raw * (1 + jitter)) for d in delays)
        assert len(set(delays)) > 1


def test_jitter_is_reproducible_with_a_seeded_rng() -> None:
    """The same seed gives the same delays: randomness is a parameter."""
    policy = RetryPolicy(max_attempts=3, base_s=10.0, max_s=300.0, jitter=0.2)
    first = [delay_s(a, 10.0, policy, random.Random(7)) for a in range(1, 6)]
    second = [delay_s(a, 10.0, policy, random.Random(7)) for a in range(1, 6)]
    assert first == second


@pytest.mark.parametrize(
    ("attempts", "max_attempts", "outcome"),
    [
        (1, 3, Retry(10.0)),
        (2, 3, Retry(20.0)),
        (3, 3, GiveUp("error")),
        (4, 3, GiveUp("error")),
        (1, 1, GiveUp("error")),
    ],
)
def test_after_failure_retries_while_attempts_remain(
    attempts: int, max_attempts: int, outcome: Retry | GiveUp
) -> None:
    """A failure retries after the backoff until attempts reach max_attempts, then gives up."""
    assert outcome == after_failure(
        attempts=attempts,
        max_attempts=max_attempts,
        base_s=10.0,
        policy=POLICY,
        rng=random.Random(0),
    )


@pytest.mark.parametrize(
    ("attempts", "max_attempts", "crashes", "max_crashes", "outcome"),
    [
        (1, 3, 0, 3, Retry(0.0)),
        (2, 3, 0, 3, Retry(0.0)),
        (2, 3, 1, 3, Retry(20.0)),
        (1, 3, 1, 3, Retry(10.0)),
        (2, 9, 2, 3, GiveUp("poison")),
        (3, 3, 2, 3, GiveUp("poison")),
        (1, 9, 0, 1, GiveUp("poison")),
        (3, 3, 0, 3, GiveUp("crashed")),
        (3, 3, 1, 3, GiveUp("crashed")),
    ],
)
def test_after_crash_quarantines_poison_before_counting_attempts(
    attempts: int, max_attempts: int, crashes: int, max_crashes: int, outcome: Retry | GiveUp
) -> None:
    """The crash that reaches max_crashes is poison; otherwise a crash is a failure (crashed),
    retried at once the first time and after the backoff from the second on."""
    assert outcome == after_crash(
        attempts=attempts,
        max_attempts=max_attempts,
        crashes=crashes,
        max_crashes=max_crashes,
        base_s=10.0,
        policy=POLICY,
        rng=random.Random(0),
    )
