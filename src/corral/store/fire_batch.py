"""The fires of one transaction, decided together and written in two round trips.

A scheduler pass fires a hundred schedules in one transaction. A statement per fire would
cost PostgreSQL five hundred statements a pass (bench/schedule_pass.py: 250 ms); instead
each step is one statement over all the fires, its rows a JSON array:

    decide (in memory): for each fire, its outcome: overlap (by the status of the previous
        fire's task, read with the schedule), room in the queue (max_ready, read once a
        queue), else created with a fresh task id
    write: insert every fire key at once (`insert_fires`: a key taken inserts nothing),
        read which went in; for those, the tasks, each schedule's last task, the events

The decisions assume each earlier fire of the batch went in. A key already taken (a fire
that a trigger or backfill made at the same second) makes one fire fewer than decided,
never one more: the key decides what exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.foundation.ids import TASK_PREFIX, new_id
from corral.model.states import TaskStatus
from corral.store import journal
from corral.store.driver import Json, Tx
from corral.store.tasks import insert_tasks, task_row

if TYPE_CHECKING:  # read only by the schedule commands and the scheduler
    from corral.model.schedules import Missed, Schedule, ScheduleFire


@dataclass(slots=True)
class _Pending:
    schedule: Schedule
    at: datetime
    outcome: str
    task_id: str | None
    note: str | None


class FireBatch:
    """Fires to make in one transaction `tx` (module docstring)."""

    def __init__(self, tx: Tx, *, max_attempts: int, retry_base_s: float, actor: str) -> None:
        self._tx, self._actor = tx, actor
        self._max_attempts, self._retry_base_s = max_attempts, retry_base_s
        self._pending: list[_Pending] = []
        self._previous: dict[str, TaskStatus | None] = {}  # schedule -> its last task's status
        # (namespace, queue) -> (room left, max_ready)
        self._room: dict[tuple[str, str], tuple[int, int] | None] = {}

    def miss(self, schedule: Schedule, missed: Missed) -> None:
        """Record a range of times not caught up, as one fire at its newest time."""
        self._pending.append(_Pending(schedule, missed.last_at, "missed", None, missed.note))

    def fire(self, schedule: Schedule, at: datetime, *, overlap: bool) -> None:
        """Decide the fire of `schedule` at `at`; `overlap`: by its policy, else always."""
        refusal = self._overlap_refusal(schedule) if overlap else None
        queue = schedule.template.get("queue", "default")
        refusal = refusal or self._room_refusal(schedule.namespace, queue)
        if refusal:
            self._pending.append(_Pending(schedule, at, "skipped", None, refusal))
            return
        self._pending.append(_Pending(schedule, at, "created", new_id(TASK_PREFIX), None))
        self._previous[schedule.id] = TaskStatus.READY

    def _overlap_refusal(self, schedule: Schedule) -> str | None:
        from corral.model.schedules import overlap_refusal

        previous = self._previous.get(schedule.id, schedule.last_task_status)
        return overlap_refusal(schedule.overlap, previous)

    def _room_refusal(self, namespace: str, queue: str) -> str | None:
        """Why `queue` of `namespace` takes no more tasks (its max_ready), counting this
        batch's tasks: its room is read once per batch, under the lock the limit's row takes
        on PostgreSQL."""
        if (namespace, queue) not in self._room:
            row = self._tx.one("queue_room", queue=queue, namespace=namespace)
            self._room[namespace, queue] = (
                None if row is None else (row["max_ready"] - row["waiting"], row["max_ready"])
            )
        room = self._room[namespace, queue]
        if room is None:
            return None
        left, max_ready = room
        if left <= 0:
            return f"queue {queue!r} is full: its max_ready is {max_ready}"
        self._room[namespace, queue] = (left - 1, max_ready)
        return None

    def write(self) -> list[ScheduleFire]:
        """Insert the fires decided; each made (its key was free) with its task and event.
        The fires made, in the order decided."""
        from corral.model.cron import fire_key

        tx = self._tx
        keyed = {fire_key(f.schedule.id, f.at): f for f in self._pending}
        fires = [
            {
                "key": key,
                "schedule_id": f.schedule.id,
                "fire_at": f.at.timestamp(),
                "outcome": f.outcome,
                "task_id": f.task_id,
                "note": f.note,
            }
            for key, f in keyed.items()
        ]
        inserted = {row["key"] for row in tx.all("insert_fires", fires=Json(fires))}
        made = [(key, f) for key, f in keyed.items() if key in inserted]
        self._create([f for _, f in made if f.task_id is not None])
        return [_record(f, key, tx.now) for key, f in made]

    def _create(self, fired: list[_Pending]) -> None:
        """The tasks of the fires made, each schedule's newest as its last, and the events."""
        if not fired:
            return
        tx = self._tx
        insert_tasks(tx, [self._task_row(f) for f in fired])
        newest = {f.schedule.id: f.task_id for f in fired}
        last = [{"schedule_id": s, "task_id": t} for s, t in newest.items()]
        tx.send_rows("set_last_tasks", last)
        journal.record_all(tx, [self._event(f) for f in fired])

    def _task_row(self, fire: _Pending) -> dict[str, Any]:
        """The fire's task, ready now, in its schedule's namespace."""
        assert fire.task_id is not None  # a fire made creates a task
        return task_row(
            fire.schedule.task(fire.at),
            task_id=fire.task_id,
            status=TaskStatus.READY,
            max_attempts=self._max_attempts,
            retry_base_s=self._retry_base_s,
            namespace=fire.schedule.namespace,
        )

    def _event(self, fire: _Pending) -> dict[str, Any]:
        return journal.entry(
            "task.created",
            actor=self._actor,
            task_id=fire.task_id,
            to_status=TaskStatus.READY,
            data={"schedule_id": fire.schedule.id, "fire_at": fire.at.isoformat()},
        )


def _record(fire: _Pending, key: str, now: datetime) -> ScheduleFire:
    from corral.model.schedules import FireOutcome, ScheduleFire

    return ScheduleFire(
        key=key,
        schedule_id=fire.schedule.id,
        fire_at=fire.at,
        outcome=FireOutcome(fire.outcome),
        task_id=fire.task_id,
        task_status=TaskStatus.READY if fire.task_id else None,
        note=fire.note,
        recorded_at=now,
    )
