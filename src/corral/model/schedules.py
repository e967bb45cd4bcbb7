"""Schedule records and the pure decisions of a scheduler pass.

A schedule is a cron expression (model/cron.py), a time zone, and the template of the task
each fire creates. Its `next_fire_at` is the oldest scheduled time it has not handled yet:
the scheduler finds due schedules by it alone, and the next time is always computed from
the last *scheduled* time, never from the clock at the moment of firing.

    a pass:  due schedules (next_fire_at <= now, not paused)
             ─► plan_fires: the fire times to make, oldest first, and what was missed
             ─► the store applies each plan in one transaction, with a compare-and-set on
                next_fire_at; each fire inserts its key `schedule:{id}:{time}` or nothing
                (the key is taken), so two passes at once make each fire once

Catch-up after downtime: of the times in (the last handled, now], at most `max_catchup`
are made (the newest ones, created oldest first), none older than the catch-up window;
the rest are recorded as one `missed` fire that says which and why. Overlap, when a fire
comes while the previous fire's task is unfinished: `skip` records the fire as skipped,
`buffer-one` makes it only if that task has started (so at most one waits), `allow`
always makes it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from corral.foundation.durations import MAX_SPAN_S, format_duration, iso
from corral.foundation.errors import InvalidInput
from corral.foundation.records import field, record
from corral.model import cron
from corral.model.namespaces import DEFAULT_NAMESPACE
from corral.model.states import FINAL, TaskStatus
from corral.model.tasks import NEW_TASK_FIELDS, NewTask, check_name

DEFAULT_MAX_CATCHUP = 100
# The template fields a schedule keeps (NewTask's table's): a fire's task has no
# dependencies, parent or delay.
TEMPLATE_FIELDS = tuple(f.name for f in NEW_TASK_FIELDS if f.template)
WAITING = frozenset({TaskStatus.READY, TaskStatus.BLOCKED})


class Overlap(StrEnum):
    """What a fire does while the previous fire's task is unfinished."""

    SKIP = "skip"
    BUFFER_ONE = "buffer-one"
    ALLOW = "allow"


class FireOutcome(StrEnum):
    """What became of a fire time."""

    CREATED = "created"  # its task was made
    SKIPPED = "skipped"  # by the overlap policy, or a full queue
    MISSED = "missed"  # a range of times not caught up (the note says which and why)


@record(frozen=True, slots=True, kw_only=True)
class NewSchedule:
    """What `schedule add` takes; validated on construction (the expression too)."""

    id: str
    cron: str
    timezone: str = "UTC"
    template: dict[str, Any] = field(default_factory=dict)
    overlap: Overlap = Overlap.SKIP
    max_catchup: int = DEFAULT_MAX_CATCHUP
    catchup_window_s: float | None = None

    def __post_init__(self) -> None:
        check_name("id", self.id)
        # The fire keys `schedule:{id}:{time}` are read by their prefix, and the id is a
        # segment of the HTTP API's paths (`../x` would name another route).
        if self.id.startswith(".") or any(c in self.id for c in ":/\\?#%"):
            raise InvalidInput("id", "a name not starting with '.', without : / \\ ? # %", self.id)
        cron.check(self.cron, self.timezone)
        unknown = set(self.template) - set(TEMPLATE_FIELDS)
        if unknown:
            raise InvalidInput("template", f"fields of {', '.join(TEMPLATE_FIELDS)}", min(unknown))
        NewTask(**self.template)  # the task each fire makes: refused now, not at 2 a.m.
        if isinstance(self.max_catchup, bool) or not 1 <= self.max_catchup <= 100_000:
            raise InvalidInput("max_catchup", "a whole number from 1 to 100000", self.max_catchup)
        window = self.catchup_window_s
        if window is not None and not 1 <= window <= MAX_SPAN_S:
            raise InvalidInput("catchup_window", "a duration from 1 s to 100 years", window)


@record(frozen=True, slots=True, kw_only=True)
class Schedule:
    """A schedule as stored, with the status of its last fire's task."""

    id: str
    cron: str
    timezone: str
    template: dict[str, Any]
    overlap: Overlap
    max_catchup: int
    catchup_window_s: float | None
    paused: bool
    pause_note: str | None
    next_fire_at: datetime | None  # None: the expression fires no more
    last_fire_at: datetime | None
    last_task_id: str | None
    last_task_status: TaskStatus | None
    created_at: datetime
    updated_at: datetime
    namespace: str = DEFAULT_NAMESPACE  # where its fires' tasks go

    def task(self, fire_at: datetime) -> NewTask:
        """The task a fire at `fire_at` makes: the template, labelled with its schedule."""
        labels = {
            **self.template.get("labels", {}),
            "schedule_id": self.id,
            "fire_at": fire_at.isoformat(),
        }
        return NewTask(**{**self.template, "labels": labels})

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "id": self.id,
            "cron": self.cron,
            "timezone": self.timezone,
            "template": self.template,
            "overlap": str(self.overlap),
            "max_catchup": self.max_catchup,
            "catchup_window_s": self.catchup_window_s,
            "paused": self.paused,
            "pause_note": self.pause_note,
            "next_fire_at": iso(self.next_fire_at),
            "last_fire_at": iso(self.last_fire_at),
            "last_task_id": self.last_task_id,
            "last_task_status": self.last_task_status,
            "created_at": iso(self.created_at),
            "namespace": self.namespace,
        }


@record(frozen=True, slots=True, kw_only=True)
class ScheduleFire:
    """One fire time of a schedule: its key, what became of it, and its task's status."""

    key: str
    schedule_id: str
    fire_at: datetime
    outcome: FireOutcome
    task_id: str | None
    task_status: TaskStatus | None
    note: str | None
    recorded_at: datetime

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "key": self.key,
            "schedule_id": self.schedule_id,
            "fire_at": iso(self.fire_at),
            "outcome": str(self.outcome),
            "task_id": self.task_id,
            "task_status": self.task_status,
            "note": self.note,
            "recorded_at": iso(self.recorded_at),
        }


@record(frozen=True, slots=True, kw_only=True)
class Missed:
    """Scheduled times from `first_at` to `last_at` that were not made, and why."""

    first_at: datetime
    last_at: datetime
    reason: str

    @property
    def note(self) -> str:
        """What `schedule show` says of them."""
        return f"not caught up: {iso(self.first_at)} to {iso(self.last_at)}, {self.reason}"


@record(frozen=True, slots=True, kw_only=True)
class FirePlan:
    """What one pass does to one schedule, applied only if its `next_fire_at` is still
    `seen_next_fire_at` (another pass may have handled it meanwhile)."""

    schedule_id: str
    seen_next_fire_at: datetime
    fires: tuple[datetime, ...]  # oldest first
    missed: Missed | None
    next_fire_at: datetime | None


def plan_fires(schedule: Schedule, now: datetime) -> FirePlan:
    """The fires a pass at `now` makes for a due schedule (module docstring)."""
    assert schedule.next_fire_at is not None  # a due schedule has a next time
    where = cron.zone(schedule.timezone)
    oldest = lower = schedule.next_fire_at
    window = schedule.catchup_window_s
    reasons = []
    if window is not None and oldest < now - timedelta(seconds=window):
        lower = now - timedelta(seconds=window)
        reasons.append(f"older than the catch-up window ({format_duration(window)})")
    fires: list[datetime] = []
    newest_missed = None
    for at in cron.times_until(schedule.cron, where, now):
        if at < oldest:
            break
        if at < lower or len(fires) == schedule.max_catchup:
            if at >= lower:
                reasons.insert(0, f"more than max_catchup ({schedule.max_catchup}) were due")
            newest_missed = at
            break
        fires.append(at)
    missed = None
    if newest_missed is not None:
        missed = Missed(first_at=oldest, last_at=newest_missed, reason="; ".join(reasons))
    return FirePlan(
        schedule_id=schedule.id,
        seen_next_fire_at=oldest,
        fires=tuple(reversed(fires)),
        missed=missed,
        next_fire_at=next(cron.times_after(schedule.cron, where, now), None),
    )


def overlap_refusal(overlap: Overlap, previous: TaskStatus | None) -> str | None:
    """Why a fire makes no task, given the status of the previous fire's task; None if it
    makes one."""
    if previous is None or previous in FINAL or overlap is Overlap.ALLOW:
        return None
    if overlap is Overlap.SKIP:
        return f"overlap skip: the previous fire's task is {previous}"
    if previous in WAITING:
        return f"overlap buffer-one: the previous fire's task is still {previous}"
    return None
