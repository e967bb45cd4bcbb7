"""The worker liveness rule and worker specs."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral.foundation.errors import InvalidInput
from corral.foundation.policies import LivenessPolicy
from corral.model.states import WorkerStatus
from corral.model.workers import (
    NewWorker,
    liveness,
    missed_heartbeats,
    silent_until,
    working_status,
)

POLICY = LivenessPolicy(heartbeat_interval_s=10.0, dead_after_missed=3)


@pytest.mark.parametrize(
    ("elapsed_s", "missed", "verdict"),
    [
        (0.0, 0, None),
        (10.0, 0, None),
        (10.7, 0, None),
        (10.75, 1, WorkerStatus.STALE),
        (20.7, 1, WorkerStatus.STALE),
        (20.75, 2, WorkerStatus.STALE),
        (30.7, 2, WorkerStatus.STALE),
        (30.75, 3, WorkerStatus.DEAD),
        (10_000.0, 999, WorkerStatus.DEAD),
    ],
)
def test_liveness_thresholds(elapsed_s: float, missed: int, verdict: WorkerStatus | None) -> None:
    """At a 10 s interval a beat is missed 0.75 s late: stale at one miss (seed 002's 10 s
    from the last heartbeat, and one more), dead at dead_after_missed."""
    assert missed == missed_heartbeats(elapsed_s, POLICY)
    assert verdict == liveness(elapsed_s, POLICY)


def test_a_short_interval_misses_a_beat_half_an_interval_late() -> None:
    """Below two seconds the slack is half an interval (a second would be several beats)."""
    policy = LivenessPolicy(heartbeat_interval_s=0.2, dead_after_missed=3)
    assert [None, WorkerStatus.STALE, WorkerStatus.DEAD] == [
        liveness(0.29, policy),
        liveness(0.31, policy),
        liveness(0.71, policy),
    ]


def test_one_missed_heartbeat_can_be_dead() -> None:
    """With dead_after_missed = 1 a worker goes straight from healthy to dead."""
    policy = LivenessPolicy(heartbeat_interval_s=1.0, dead_after_missed=1)
    assert [None, WorkerStatus.DEAD] == [liveness(1.4, policy), liveness(1.5, policy)]


@pytest.mark.parametrize(
    ("status", "silent_s"),
    [
        (WorkerStatus.IDLE, 10.75),
        (WorkerStatus.BUSY, 10.75),
        (WorkerStatus.STARTING, 10.75),
        (WorkerStatus.STALE, 30.75),
        (WorkerStatus.DRAINING, 30.75),  # never stale: next, dead
    ],
)
def test_silent_until_is_when_the_verdict_next_changes(status, silent_s) -> None:
    """The silence after which the reconciler has something to mark, by status."""
    assert silent_s == silent_until(status, POLICY)
    assert liveness(silent_s, POLICY) in {WorkerStatus.STALE, WorkerStatus.DEAD}
    assert liveness(silent_s - 0.01, POLICY) in {None, WorkerStatus.STALE}


def test_negative_elapsed_time_is_healthy() -> None:
    """A heartbeat stamped a little in the future (clock skew) never counts as missed."""
    assert (0, None) == (missed_heartbeats(-30.0, POLICY), liveness(-30.0, POLICY))


@pytest.mark.parametrize(("active", "status"), [(0, WorkerStatus.IDLE), (1, WorkerStatus.BUSY)])
def test_working_status_follows_active_claims(active: int, status: WorkerStatus) -> None:
    """idle with no active claim, busy with any."""
    assert status == working_status(active)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"name": ""}, "name"),
        ({"name": "   "}, "name"),
        ({"name": "x" * 101}, "name"),
        ({"name": "tab\there"}, "name"),
        ({"name": "w", "max_concurrent": 0}, "max_concurrent"),
        ({"name": "w", "max_concurrent": True}, "max_concurrent"),
    ],
)
def test_bad_worker_specs_name_the_field(fields: dict[str, object], field: str) -> None:
    """NewWorker validates on construction and names the offending field."""
    with pytest.raises(InvalidInput, match=f"^{field}: expected") as caught:
        NewWorker(**fields)  # type: ignore[arg-type]
    assert field == caught.value.field
