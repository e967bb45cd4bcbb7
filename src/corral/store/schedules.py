"""Store operations on schedules: add, read, pause, resume, remove, and fire.

A fire is once because of its key, not of any lock in a process: `insert_fire` inserts
`schedule:{id}:{time}` or nothing, in the transaction that creates the fire's task, so a
second scheduler (a standby taking over, `corral reconcile` beside an orchestrator, a
backfill run twice) that reaches the same fire inserts nothing and creates nothing. A
scheduler pass also moves each schedule's `next_fire_at` with a compare-and-set
(`advance_schedule`), so a pass that lost the race skips the schedule altogether.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from corral.foundation import errors
from corral.model.states import TaskStatus
from corral.store import journal
from corral.store.driver import Driver, Json, Row, Tx
from corral.store.operations import OPERATOR, VIEWER, Repository, served

if TYPE_CHECKING:  # read only by the schedule commands and the scheduler
    from corral.model.schedules import FirePlan, NewSchedule, Schedule, ScheduleFire
    from corral.store.fire_batch import FireBatch


class Schedules(Repository):
    """Cron schedules and their fires."""

    NAME = "schedules"

    @served(OPERATOR)
    def add_schedule(self, spec: NewSchedule, *, next_fire_at: datetime, actor: str) -> Schedule:
        """Insert schedule `spec`, first due at `next_fire_at`; Refused if its id is taken."""
        with self._driver.write() as tx:
            row = tx.one(
                "insert_schedule",
                schedule_id=spec.id,
                cron=spec.cron,
                timezone=spec.timezone,
                template=Json(spec.template),
                overlap=str(spec.overlap),
                max_catchup=spec.max_catchup,
                catchup_window_s=spec.catchup_window_s,
                next_fire_at=next_fire_at,
            )
            if row is None:
                raise errors.Refused(f"schedule {spec.id!r} exists already")
            journal.record(tx, "schedule.added", actor=actor, data={"schedule_id": spec.id})
        return self.get_schedule(spec.id)

    @served(VIEWER)
    def get_schedule(self, schedule_id: str) -> Schedule:
        """Schedule `schedule_id`, or NotFound."""
        with self._driver.read() as tx:
            row = tx.one("get_schedule", schedule_id=schedule_id)
        if row is None:
            raise errors.NotFound("schedule", schedule_id)
        return _schedule(self._driver, row)

    @served(VIEWER)
    def list_schedules(self) -> list[Schedule]:
        """Every schedule, by id."""
        with self._driver.read() as tx:
            return [_schedule(self._driver, row) for row in tx.all("list_schedules")]

    @served(VIEWER)
    def due_schedules(self, limit: int) -> list[Schedule]:
        """Up to `limit` unpaused schedules whose next fire time has come, oldest due first."""
        with self._driver.read() as tx:
            return [_schedule(self._driver, r) for r in tx.all("due_schedules", limit=limit)]

    @served(VIEWER)
    def schedule_fires(self, schedule_id: str, limit: int) -> list[ScheduleFire]:
        """The newest `limit` fires of a schedule, newest first, with their tasks' status."""
        with self._driver.read() as tx:
            found = tx.all(
                "schedule_fires", schedule_id=schedule_id, **_key_range(schedule_id), limit=limit
            )
        return [_fire(self._driver, row) for row in found]

    @served(OPERATOR)
    def apply_fire_plans(
        self, plans: list[FirePlan], *, max_attempts: int, retry_base_s: float, actor: str
    ) -> list[ScheduleFire]:
        """Apply a scheduler pass's plans in one transaction; a plan whose schedule another
        pass handled meanwhile (its next_fire_at moved, or it was paused) is left out. The
        fires recorded, oldest first per schedule."""
        by_id = {plan.schedule_id: plan for plan in plans}
        with self._driver.write() as tx:
            advanced = tx.all("advance_schedules", plans=Json([_cas(p) for p in plans]))
            batch = _batch(tx, max_attempts=max_attempts, retry_base_s=retry_base_s, actor=actor)
            for row in advanced:  # a schedule missing here was handled by another pass
                schedule = _schedule(self._driver, row)
                plan = by_id[schedule.id]
                if plan.missed is not None:
                    batch.miss(schedule, plan.missed)
                for at in plan.fires:
                    batch.fire(schedule, at, overlap=True)
            return batch.write()

    @served(OPERATOR)
    def fire_schedule(
        self,
        schedule_id: str,
        fire_times: list[datetime],
        *,
        max_attempts: int,
        retry_base_s: float,
        actor: str,
    ) -> list[ScheduleFire]:
        """Fire `schedule_id` at each of `fire_times` (trigger, backfill) whatever its
        overlap policy; a time already fired is left as it was. The fires made."""
        with self._driver.write() as tx:
            schedule = _schedule(self._driver, _locked(tx, schedule_id))
            batch = _batch(tx, max_attempts=max_attempts, retry_base_s=retry_base_s, actor=actor)
            for at in fire_times:
                batch.fire(schedule, at, overlap=False)
            return batch.write()

    @served(OPERATOR)
    def pause_schedule(self, schedule_id: str, *, note: str | None, actor: str) -> Schedule:
        """Stop firing `schedule_id` until resumed; Refused if it is paused already."""
        with self._driver.write() as tx:
            _locked(tx, schedule_id)
            if not tx.run("pause_schedule", schedule_id=schedule_id, note=note):
                raise errors.Refused(f"schedule {schedule_id!r} is paused already")
            data = {"schedule_id": schedule_id}
            journal.record(tx, "schedule.paused", actor=actor, reason=note, data=data)
        return self.get_schedule(schedule_id)

    @served(OPERATOR)
    def resume_schedule(
        self, schedule_id: str, *, skip_to: datetime | None, actor: str
    ) -> Schedule:
        """Fire `schedule_id` again: catching up from where it stopped (by its rules), or,
        given `skip_to` (its first time after now), recording the times before it as missed.
        Refused if it is not paused."""
        with self._driver.write() as tx:
            old = _locked(tx, schedule_id)
            if not tx.run("resume_schedule", schedule_id=schedule_id, next_fire_at=skip_to):
                raise errors.Refused(f"schedule {schedule_id!r} is not paused")
            schedule = _schedule(self._driver, old)
            first = schedule.next_fire_at
            if skip_to is not None and first is not None and first < tx.now:
                from corral.model.schedules import Missed

                skipped = Missed(first_at=first, last_at=tx.now, reason="resumed --skip-missed")
                batch = _batch(tx, max_attempts=1, retry_base_s=0, actor=actor)
                batch.miss(schedule, skipped)
                batch.write()
            journal.record(tx, "schedule.resumed", actor=actor, data={"schedule_id": schedule_id})
        return self.get_schedule(schedule_id)

    @served(OPERATOR)
    def remove_schedule(self, schedule_id: str, *, actor: str) -> None:
        """Delete a schedule and its fire records; the tasks it made stay."""
        with self._driver.write() as tx:
            _locked(tx, schedule_id)
            tx.run("delete_schedule_fires", **_key_range(schedule_id))
            tx.run("delete_schedule", schedule_id=schedule_id)
            journal.record(tx, "schedule.removed", actor=actor, data={"schedule_id": schedule_id})


def _batch(tx: Tx, *, max_attempts: int, retry_base_s: float, actor: str) -> FireBatch:
    """A batch of fires in `tx` (its module, and its record, load only where fires are made:
    every command imports this one)."""
    from corral.store.fire_batch import FireBatch

    return FireBatch(tx, max_attempts=max_attempts, retry_base_s=retry_base_s, actor=actor)


def _locked(tx: Tx, schedule_id: str) -> Row:
    """Schedule `schedule_id`'s row, locked until the transaction ends; NotFound if none."""
    row = tx.one("lock_schedule", schedule_id=schedule_id)
    if row is None:
        raise errors.NotFound("schedule", schedule_id)
    return row


def _key_range(schedule_id: str) -> dict[str, str]:
    """The keys of a schedule's fires: `schedule:{id}:` and on, up to the next prefix (`;`
    follows `:`); ids hold no `:`, so no other schedule's keys fall in between."""
    return {"first_key": f"schedule:{schedule_id}:", "past_key": f"schedule:{schedule_id};"}


def _cas(plan: FirePlan) -> dict[str, float | str | None]:
    """A plan as `advance_schedules` takes it: instants in seconds since the epoch."""
    last = plan.fires[-1] if plan.fires else None
    return {
        "schedule_id": plan.schedule_id,
        "seen": plan.seen_next_fire_at.timestamp(),
        "next_fire_at": None if plan.next_fire_at is None else plan.next_fire_at.timestamp(),
        "last_fire_at": None if last is None else last.timestamp(),
    }


def _schedule(driver: Driver, row: Row) -> Schedule:
    from corral.model.schedules import Overlap, Schedule

    def instant(column: str) -> datetime | None:
        value = row[column]
        return None if value is None else driver.instant(value)

    keys = row.keys()
    status = row["last_task_status"] if "last_task_status" in keys else None
    return Schedule(
        id=row["id"],
        cron=row["cron"],
        timezone=row["timezone"],
        template=driver.json(row["template"]),
        overlap=Overlap(row["overlap"]),
        max_catchup=row["max_catchup"],
        catchup_window_s=row["catchup_window_s"],
        paused=bool(row["paused"]),
        pause_note=row["pause_note"],
        next_fire_at=instant("next_fire_at"),
        last_fire_at=instant("last_fire_at"),
        last_task_id=row["last_task_id"],
        last_task_status=None if status is None else TaskStatus(status),
        created_at=driver.instant(row["created_at"]),
        updated_at=driver.instant(row["updated_at"]),
        namespace=row["namespace"],
    )


def _fire(driver: Driver, row: Row) -> ScheduleFire:
    from corral.model.schedules import FireOutcome, ScheduleFire

    status = row["task_status"]
    return ScheduleFire(
        key=row["key"],
        schedule_id=row["schedule_id"],
        fire_at=driver.instant(row["fire_at"]),
        outcome=FireOutcome(row["outcome"]),
        task_id=row["task_id"],
        task_status=None if status is None else TaskStatus(status),
        note=row["note"],
        recorded_at=driver.instant(row["recorded_at"]),
    )
