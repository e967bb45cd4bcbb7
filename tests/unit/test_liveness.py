"""The worker liveness rule and worker specs."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral.errors import InvalidInput
from corral.model.states import WorkerStatus
from corral.model.workers import NewWorker, liveness, missed_heartbeats, working_status
from corral.policies import LivenessPolicy

POLICY = LivenessPolicy(heartbeat_interval_s=10.0, dead_after_missed=3)


@pytest.mark.parametrize(
    ("elapsed_s", "missed", "verdict"),
    [
        (0.0, 0, None),
        (10.0, 0, None),
        (14.9, 0, None),
        (15.0, 1, WorkerStatus.STALE),
        (24.9, 1, WorkerStatus.STALE),
        (25.0, 2, WorkerStatus.STALE),
        (34.9, 2, WorkerStatus.STALE),
        (35.0, 3, WorkerStatus.DEAD),
        (10_000.0, 999, WorkerStatus.DEAD),
    ],
)
def test_liveness_thresholds(elapsed_s: float, missed: int, verdict: WorkerStatus | None) -> None:
    """A beat is missed half an interval late; stale at one miss, dead at dead_after_missed."""
    assert missed == missed_heartbeats(elapsed_s, POLICY)
    assert verdict == liveness(elapsed_s, POLICY)


def test_one_missed_heartbeat_can_be_dead() -> None:
    """With dead_after_missed = 1 a worker goes straight from healthy to dead."""
    policy = LivenessPolicy(heartbeat_interval_s=1.0, dead_after_missed=1)
    assert [None, WorkerStatus.DEAD] == [liveness(1.4, policy), liveness(1.5, policy)]


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
