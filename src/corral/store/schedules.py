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

from corral import errors
from corral.ids import TASK_PREFIX, new_id
from corral.model.states import TaskStatus
from corral.store import journal
from corral.store.driver import Driver, Json, Row, Tx
from corral.store.queues import check_room
from corral.store.tasks import insert_task

if TYPE_CHECKING:  # read only by the schedule commands and the scheduler
    from corral.model.schedules import FirePlan, NewSchedule, Schedule, ScheduleFire


class ScheduleOps:
    """Cron schedules and their fires."""

    _driver: Driver

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

    def get_schedule(self, schedule_id: str) -> Schedule:
        """Schedule `schedule_id`, or NotFound."""
        with self._driver.read() as tx:
            row = tx.one("get_schedule", schedule_id=schedule_id)
        if row is None:
            raise errors.NotFound("schedule", schedule_id)
        return _schedule(self._driver, row)

    def list_schedules(self) -> list[Schedule]:
        """Every schedule, by id."""
        with self._driver.read() as tx:
            return [_schedule(self._driver, row) for row in tx.all("list_schedules")]

    def due_schedules(self, limit: int) -> list[Schedule]:
        """Up to `limit` unpaused schedules whose next fire time has come, oldest due first."""
        with self._driver.read() as tx:
            return [_schedule(self._driver, r) for r in tx.all("due_schedules", limit=limit)]

    def schedule_fires(self, schedule_id: str, limit: int) -> list[ScheduleFire]:
        """The newest `limit` fires of a schedule, newest first, with their tasks' status."""
        with self._driver.read() as tx:
            found = tx.all("schedule_fires", schedule_id=schedule_id, limit=limit)
        return [_fire(self._driver, row) for row in found]

    def apply_fire_plans(
        self, plans: list[FirePlan], *, max_attempts: int, retry_base_s: float, actor: str
    ) -> list[ScheduleFire]:
        """Apply a scheduler pass's plans in one transaction; a plan whose schedule another
        pass handled meanwhile (its next_fire_at moved, or it was paused) is left out. The
        fires recorded, oldest first per schedule."""
        recorded: list[ScheduleFire] = []
        with self._driver.write() as tx:
            for plan in plans:
                row = tx.one(
                    "advance_schedule",
                    schedule_id=plan.schedule_id,
                    seen_next_fire_at=plan.seen_next_fire_at,
                    next_fire_at=plan.next_fire_at,
                    last_fire_at=plan.fires[-1] if plan.fires else None,
                )
                if row is None:
                    continue
                schedule = _schedule(self._driver, row)
                if plan.missed is not None:
                    missed = plan.missed
                    _record(
                        tx,
                        schedule.id,
                        missed.last_at,
                        outcome="missed",
                        task_id=None,
                        note=missed.note,
                    )
                firing = _Firing(tx, schedule, max_attempts, retry_base_s, actor, overlap=True)
                recorded += [f for at in plan.fires if (f := firing.fire(at)) is not None]
        return recorded

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
            firing = _Firing(
                tx,
                _schedule(self._driver, _locked(tx, schedule_id)),
                max_attempts,
                retry_base_s,
                actor,
                overlap=False,
            )
            return [f for at in fire_times if (f := firing.fire(at)) is not None]

    def pause_schedule(self, schedule_id: str, *, note: str | None, actor: str) -> Schedule:
        """Stop firing `schedule_id` until resumed; Refused if it is paused already."""
        with self._driver.write() as tx:
            _locked(tx, schedule_id)
            if not tx.run("pause_schedule", schedule_id=schedule_id, note=note):
                raise errors.Refused(f"schedule {schedule_id!r} is paused already")
            data = {"schedule_id": schedule_id}
            journal.record(tx, "schedule.paused", actor=actor, reason=note, data=data)
        return self.get_schedule(schedule_id)

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
            stopped_at = old["next_fire_at"]
            if skip_to is not None and stopped_at is not None:
                first = self._driver.instant(stopped_at)
                if first < tx.now:
                    note = f"not caught up: {first.isoformat()} to now, resumed with --skip-missed"
                    _record(tx, schedule_id, tx.now, outcome="missed", task_id=None, note=note)
            journal.record(tx, "schedule.resumed", actor=actor, data={"schedule_id": schedule_id})
        return self.get_schedule(schedule_id)

    def remove_schedule(self, schedule_id: str, *, actor: str) -> None:
        """Delete a schedule and its fire records; the tasks it made stay."""
        with self._driver.write() as tx:
            _locked(tx, schedule_id)
            tx.run("delete_schedule_fires", schedule_id=schedule_id)
            tx.run("delete_schedule", schedule_id=schedule_id)
            journal.record(tx, "schedule.removed", actor=actor, data={"schedule_id": schedule_id})


def _locked(tx: Tx, schedule_id: str) -> Row:
    """Schedule `schedule_id`'s row, locked until the transaction ends; NotFound if none."""
    row = tx.one("lock_schedule", schedule_id=schedule_id)
    if row is None:
        raise errors.NotFound("schedule", schedule_id)
    return row


class _Firing:
    """Fires of one schedule inside one transaction; remembers its last task."""

    def __init__(
        self,
        tx: Tx,
        schedule: Schedule,
        max_attempts: int,
        retry_base_s: float,
        actor: str,
        *,
        overlap: bool,
    ) -> None:
        self._tx, self._schedule, self._actor = tx, schedule, actor
        self._max_attempts, self._retry_base_s = max_attempts, retry_base_s
        self._overlap = overlap
        self._last_task_id = schedule.last_task_id

    def fire(self, at: datetime) -> ScheduleFire | None:
        """Fire at `at`: the fire recorded, or None if it fired before."""
        from corral.model.schedules import FireOutcome, ScheduleFire

        refusal = self._refusal()
        task_id = None if refusal else new_id(TASK_PREFIX)
        outcome = FireOutcome.SKIPPED if refusal else FireOutcome.CREATED
        key = _record(
            self._tx, self._schedule.id, at, outcome=outcome, task_id=task_id, note=refusal
        )
        if key is None:
            return None
        if task_id is not None:
            self._create(task_id, at)
        return ScheduleFire(
            key=key,
            schedule_id=self._schedule.id,
            fire_at=at,
            outcome=outcome,
            task_id=task_id,
            task_status=TaskStatus.READY if task_id else None,
            note=refusal,
            recorded_at=self._tx.now,
        )

    def _refusal(self) -> str | None:
        from corral.model.schedules import overlap_refusal

        if self._overlap and self._last_task_id is not None:
            tx = self._tx
            found = tx.all("task_statuses", ids=[self._last_task_id])
            previous = TaskStatus(found[0]["status"]) if found else None
            refusal = overlap_refusal(self._schedule.overlap, previous)
            if refusal is not None:
                return refusal
        try:
            check_room(self._tx, self._schedule.template.get("queue", "default"))
        except errors.LimitReached as exc:
            return exc.message
        return None

    def _create(self, task_id: str, at: datetime) -> None:
        spec = self._schedule.task(at)
        insert_task(
            self._tx,
            spec,
            task_id=task_id,
            status=TaskStatus.READY,
            max_attempts=self._max_attempts,
            retry_base_s=self._retry_base_s,
        )
        tx = self._tx
        tx.send("set_last_task", schedule_id=self._schedule.id, task_id=task_id)
        self._last_task_id = task_id
        data = {"schedule_id": self._schedule.id, "fire_at": at.isoformat()}
        journal.record(
            self._tx,
            "task.created",
            actor=self._actor,
            task_id=task_id,
            to_status=TaskStatus.READY,
            data=data,
        )


def _record(
    tx: Tx, schedule_id: str, at: datetime, *, outcome: str, task_id: str | None, note: str | None
) -> str | None:
    """Insert the fire record of `at`; its key, or None if the key was taken."""
    from corral.model.cron import fire_key

    key = fire_key(schedule_id, at)
    row = tx.one(
        "insert_fire",
        key=key,
        schedule_id=schedule_id,
        fire_at=at,
        outcome=outcome,
        task_id=task_id,
        note=note,
    )
    return None if row is None else key


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
