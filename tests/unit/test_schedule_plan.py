"""The pure decisions of a scheduler pass: the fires to make, what is missed, overlap."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from corral import InvalidInput, TaskStatus
from corral.model.schedules import (
    NewSchedule,
    Overlap,
    Schedule,
    overlap_refusal,
    plan_fires,
)

NOW = datetime(2030, 1, 8, 0, 0, 30, tzinfo=UTC)


def _schedule(next_fire_at: datetime, **fields: Any) -> Schedule:
    values: dict[str, Any] = {
        "id": "s",
        "cron": "0 * * * * *",
        "timezone": "UTC",
        "template": {"title": "t"},
        "overlap": Overlap.SKIP,
        "max_catchup": 100,
        "catchup_window_s": None,
        "paused": False,
        "pause_note": None,
        "next_fire_at": next_fire_at,
        "last_fire_at": None,
        "last_task_id": None,
        "last_task_status": None,
        "created_at": NOW,
        "updated_at": NOW,
    }
    return Schedule(**{**values, **fields})


def test_a_schedule_on_time_makes_the_fires_since_its_next_time_oldest_first():
    """Due at 23:59 and passing at 00:00:30, it makes 23:59 and 00:00."""
    plan = plan_fires(_schedule(NOW - timedelta(seconds=90)), NOW)
    assert (NOW - timedelta(seconds=90), NOW - timedelta(seconds=30)) == plan.fires
    assert (None, NOW + timedelta(seconds=30)) == (plan.missed, plan.next_fire_at)


def test_the_next_time_comes_from_the_cron_not_from_when_the_pass_ran():
    """A pass 50 s late still leaves the next fire on the minute."""
    plan = plan_fires(_schedule(NOW - timedelta(seconds=30)), NOW + timedelta(seconds=20))
    assert NOW + timedelta(seconds=30) == plan.next_fire_at


def test_a_week_behind_keeps_the_newest_max_catchup_within_the_window():
    """max_catchup 100 and a day's window after a week: the newest 100 minutes; the missed
    range starts where the schedule stopped and names both bounds."""
    plan = plan_fires(_schedule(NOW - timedelta(days=7), catchup_window_s=86400.0), NOW)
    assert 100 == len(plan.fires)
    assert NOW - timedelta(seconds=30) == plan.fires[-1]
    assert plan.missed is not None
    assert (NOW - timedelta(days=7), plan.fires[0] - timedelta(minutes=1)) == (
        plan.missed.first_at,
        plan.missed.last_at,
    )
    assert "more than max_catchup (100) were due; older than the catch-up window (1d)" == (
        plan.missed.reason
    )


@pytest.mark.parametrize(
    ("overlap", "previous", "makes"),
    [
        (Overlap.SKIP, None, True),
        (Overlap.SKIP, TaskStatus.DONE, True),
        (Overlap.SKIP, TaskStatus.READY, False),
        (Overlap.SKIP, TaskStatus.RUNNING, False),
        (Overlap.SKIP, TaskStatus.IN_REVIEW, False),
        (Overlap.BUFFER_ONE, TaskStatus.RUNNING, True),
        (Overlap.BUFFER_ONE, TaskStatus.READY, False),
        (Overlap.BUFFER_ONE, TaskStatus.FAILED, True),
        (Overlap.ALLOW, TaskStatus.READY, True),
        (Overlap.ALLOW, TaskStatus.RUNNING, True),
    ],
)
def test_overlap_decides_by_the_previous_fires_task(overlap, previous, makes):
    """skip: only after it finished; buffer-one: once it started; allow: always."""
    assert makes == (overlap_refusal(overlap, previous) is None)


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"template": {"title": "t", "depends_on": ["x"]}}, "template"),
        ({"template": {"title": " "}}, "title"),
        ({"max_catchup": 0}, "max_catchup"),
        ({"catchup_window_s": 0.5}, "catchup_window"),
        ({"id": "has space"}, "id"),
        ({"id": "a:b"}, "id"),
        ({"timezone": "Nowhere/Else"}, "timezone"),
    ],
)
def test_a_bad_schedule_is_refused_naming_the_field(fields, field):
    """Validated on construction, before anything is written."""
    values = {"id": "s", "cron": "0 * * * * *", "template": {"title": "t"}, **fields}
    with pytest.raises(InvalidInput) as raised:
        NewSchedule(**values)
    assert field == raised.value.field
