"""Why a claim is refused, as the error to raise: the one wording of the exchange on both
dialects (store/exchange.py runs SQLite's statements, PostgreSQL's corral_exchange says
why in its rows)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.foundation import errors
from corral.foundation.durations import iso
from corral.model.states import CLAIMING, TaskStatus, WorkerStatus

if TYPE_CHECKING:
    from corral.model.tasks import Task
    from corral.model.workers import Worker


def cannot_claim(
    worker_id: str, status: WorkerStatus, active: int, max_concurrent: int | None
) -> errors.WorkerUnavailable | None:
    """Why worker `worker_id` takes no claim now; None if it may.

    `max_concurrent` None skips the capacity check (a claim by id makes it itself).
    """
    if status not in CLAIMING:
        return errors.WorkerUnavailable(f"worker {worker_id} is {status}: it takes no claims")
    if max_concurrent is not None and active >= max_concurrent:
        return at_capacity(worker_id, active, max_concurrent)
    return None


def at_capacity(worker_id: str, active: int, max_concurrent: int) -> errors.WorkerUnavailable:
    """The refusal of a claim to a worker that holds `max_concurrent` claims already."""
    return errors.WorkerUnavailable(
        f"worker {worker_id} is at capacity ({active} of {max_concurrent} claims)"
    )


def claim_refusal(task: Task, worker: Worker, held: str | None = None) -> errors.CorralError:
    """Why task `task` could not be claimed by `worker`; `held` names a queue limit in force."""
    if task.status is not TaskStatus.READY:
        held = f" (held by worker {task.worker_id})" if task.worker_id else ""
        return errors.Refused(f"cannot claim task {task.id}: it is {task.status}{held}")
    if task.assignee not in (None, worker.id, worker.name):
        return errors.Refused(f"task {task.id} is assigned to {task.assignee}")
    if worker.kinds and task.kind not in worker.kinds:
        return errors.Refused(f"worker {worker.id} does not run kind {task.kind!r}")
    if worker.queues and task.queue not in worker.queues:
        return errors.Refused(f"worker {worker.id} does not serve queue {task.queue!r}")
    if held is not None:
        return errors.LimitReached(f"cannot claim task {task.id}: queue {task.queue!r} is {held}")
    return errors.Refused(f"task {task.id} is delayed until {iso(task.run_after)}")
