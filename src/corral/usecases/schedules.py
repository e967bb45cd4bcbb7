"""Use cases of schedules: add, preview, pause, resume, trigger, backfill, and the scheduler
pass `fire_due` that the leading orchestrator runs every `scheduler_interval_s` and
`corral reconcile` runs once.

Times come from the cron expression (model/cron.py) and the store's clock; the rules of a
pass are model/schedules.py's; what makes each fire happen once is the store's fire key
(store/schedules.py). Nothing here sleeps or loops over time: `fire_due` is one pass.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from itertools import islice, takewhile
from typing import Any

from corral.foundation.durations import check_instant
from corral.foundation.errors import InvalidInput, Refused
from corral.foundation.settings import Settings
from corral.model import cron
from corral.model.actors import OPERATOR
from corral.model.schedules import (
    FireOutcome,
    FirePlan,
    NewSchedule,
    Schedule,
    ScheduleFire,
    plan_fires,
)
from corral.store import Store

SCHEDULER = "scheduler"  # the actor of a pass's fires
MAX_BACKFILL = 10_000  # fires one backfill makes at most: a typo in --from cannot make millions
DEFAULTS = Settings()


@dataclass(frozen=True, slots=True, kw_only=True)
class PassReport:
    """What one scheduler pass did: fires made, skipped by overlap, and ranges not caught up."""

    created: int = 0
    skipped: int = 0
    missed: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (`reconcile --json`: fires_created ...)."""
        return {
            "fires_created": self.created,
            "fires_skipped": self.skipped,
            "fires_missed": self.missed,
        }


def add_schedule(store: Store, spec: NewSchedule, *, settings: Settings = DEFAULTS) -> Schedule:
    """Add a schedule, first due at its first time after now; a schedule of a queue listed
    in `review_queues` makes tasks that require review, as `add` does."""
    queue = spec.template.get("queue", "default")
    if queue in settings.review_queues:
        spec = replace(spec, template={**spec.template, "requires_review": True})
    first = next(cron.times_after(spec.cron, cron.zone(spec.timezone), store.now()))
    return store.schedules.add_schedule(spec, next_fire_at=first, actor=OPERATOR)


def preview(
    expr: str, timezone: str, *, after: datetime, count: int, schedule_id: str | None = None
) -> list[tuple[datetime, str | None]]:
    """The next `count` fire times after `after`, each with the key it would take (with a
    `schedule_id`); reads and writes nothing."""
    cron.check(expr, timezone)
    check_instant("from", after)
    times = islice(cron.times_after(expr, cron.zone(timezone), after), count)
    return [(at, cron.fire_key(schedule_id, at) if schedule_id else None) for at in times]


def upcoming(schedule: Schedule, count: int) -> list[datetime]:
    """The schedule's next `count` fire times, from the oldest it has not handled."""
    first = schedule.next_fire_at
    if first is None:
        return []
    later = cron.times_after(schedule.cron, cron.zone(schedule.timezone), first)
    return [first, *islice(later, count - 1)]


def pause(store: Store, schedule_id: str, *, note: str | None = None) -> Schedule:
    """Stop firing until resumed."""
    return store.schedules.pause_schedule(schedule_id, note=note, actor=OPERATOR)


def resume(store: Store, schedule_id: str, *, skip_missed: bool = False) -> Schedule:
    """Fire again: by default catching up what was missed (within max_catchup and the
    catch-up window); with `skip_missed`, from the next time after now only."""
    skip_to = None
    if skip_missed:
        found = store.schedules.get_schedule(schedule_id)
        skip_to = next(cron.times_after(found.cron, cron.zone(found.timezone), store.now()), None)
    return store.schedules.resume_schedule(schedule_id, skip_to=skip_to, actor=OPERATOR)


def remove(store: Store, schedule_id: str) -> None:
    """Delete a schedule and its fire records; its tasks stay."""
    store.schedules.remove_schedule(schedule_id, actor=OPERATOR)


def trigger(store: Store, schedule_id: str, *, settings: Settings = DEFAULTS) -> ScheduleFire:
    """One fire now, outside the cron, whatever the overlap policy; Refused if the schedule
    fired at this very second already."""
    at = store.now().replace(microsecond=0)
    fires = _fire(store, schedule_id, [at], settings, actor="trigger")
    if not fires:
        raise Refused(f"schedule {schedule_id!r} fired at {at.isoformat()} already")
    return fires[0]


def backfill(
    store: Store,
    schedule_id: str,
    *,
    after: datetime,
    until: datetime,
    settings: Settings = DEFAULTS,
) -> list[ScheduleFire]:
    """Fire every time of the schedule in (after, until], whatever its overlap policy; a
    time already fired (a backfill run twice) is left as it was. The fires made."""
    check_instant("from", after)
    check_instant("to", until)
    if until <= after:
        raise InvalidInput("to", "a time after --from", until.isoformat())
    found = store.schedules.get_schedule(schedule_id)
    times = cron.times_after(found.cron, cron.zone(found.timezone), after)
    wanted = list(islice(takewhile(lambda at: at <= until, times), MAX_BACKFILL + 1))
    if len(wanted) > MAX_BACKFILL:
        raise InvalidInput("to", f"a range of at most {MAX_BACKFILL} fires", until.isoformat())
    return _fire(store, schedule_id, wanted, settings, actor="backfill")


def _fire(
    store: Store, schedule_id: str, times: list[datetime], settings: Settings, *, actor: str
) -> list[ScheduleFire]:
    return store.schedules.fire_schedule(
        schedule_id,
        times,
        max_attempts=settings.max_attempts,
        retry_base_s=settings.retry_base_s,
        actor=actor,
    )


def fire_due(store: Store, *, settings: Settings = DEFAULTS, actor: str = SCHEDULER) -> PassReport:
    """One scheduler pass: read due schedules a batch at a time, plan each, apply each
    batch in one transaction, until none is due or `scheduler_max_fires` were planned;
    `actor` is who the fires' events name (the orchestrator's scheduler, or `reconcile`)."""
    created = skipped = missed = planned = 0
    batch = settings.scheduler_batch_size
    while planned < settings.scheduler_max_fires:
        due = store.schedules.due_schedules(batch)
        now = store.now()
        plans: list[FirePlan] = []
        for schedule in due:
            plan = plan_fires(schedule, now)
            if plans and planned + len(plan.fires) > settings.scheduler_max_fires:
                break  # the rest wait for the next pass, their times intact
            plans.append(plan)
            planned += len(plan.fires)
        fires = store.schedules.apply_fire_plans(
            plans,
            max_attempts=settings.max_attempts,
            retry_base_s=settings.retry_base_s,
            actor=actor,
        )
        created += sum(f.outcome is FireOutcome.CREATED for f in fires)
        skipped += sum(f.outcome is FireOutcome.SKIPPED for f in fires)
        missed += sum(p.missed is not None for p in plans)
        if len(due) < batch or len(plans) < len(due):
            break
    return PassReport(created=created, skipped=skipped, missed=missed)
