"""`why`: the reasons a task is not running, each with a stable code and a sentence.

Reads only. The reasons come in the order a person would check them: finished or
blocked, then delayed, then who could run it, then the queue ahead of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from corral.foundation.durations import format_duration, iso
from corral.foundation.settings import Settings
from corral.model.states import CLAIMING, TaskStatus
from corral.model.subtasks import MAX_CHILDREN
from corral.model.tasks import Task, TaskFilter
from corral.model.workers import Worker
from corral.store import Store

DEFAULTS = Settings()


@dataclass(frozen=True, slots=True)
class Reason:
    """One reason, e.g. code `blocked_by` with the message `blocked by t-… (failed)`."""

    code: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Diagnosis:
    """A task and the reasons it is where it is."""

    task: Task
    reasons: list[Reason] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "task_id": self.task.id,
            "status": str(self.task.status),
            "reasons": [{"code": r.code, "message": r.message} for r in self.reasons],
        }


def why(store: Store, task_id: str, *, settings: Settings = DEFAULTS) -> Diagnosis:
    """Explain why task `task_id` is not running (or what it is doing if it is)."""
    task = store.tasks.get_task(task_id)
    now = store.now()
    if task.status is TaskStatus.RUNNING:
        return Diagnosis(task=task, reasons=_running(store, task, now))
    if task.status is TaskStatus.BLOCKED:
        return Diagnosis(task=task, reasons=_blocked(store, task))
    if task.status is TaskStatus.READY:
        return Diagnosis(task=task, reasons=_ready(store, task, now))
    return Diagnosis(task=task, reasons=[_settled(task)])


def _running(store: Store, task: Task, now: datetime) -> list[Reason]:
    assert task.worker_id is not None and task.lease_expires_at is not None
    worker = store.workers.get_worker(task.worker_id)
    seen_s = (now - worker.last_heartbeat_at).total_seconds()
    left_s = (task.lease_expires_at - now).total_seconds()
    lease = f"lease expires in {format_duration(left_s)}" if left_s > 0 else "lease has expired"
    return [
        Reason(
            "held",
            f"held by worker {worker.id} ({worker.name}, {worker.status}), "
            f"last seen {format_duration(seen_s)} ago; {lease}",
        )
    ]


def _blocked(store: Store, task: Task) -> list[Reason]:
    """Its children it waits for, then its other dependencies that are not done."""
    children = {
        c.id for c in store.tasks.list_tasks(TaskFilter(parent_id=task.id, limit=MAX_CHILDREN))
    }
    waits = [
        (d, s) for d, s in store.tasks.dependency_statuses(task.id) if s is not TaskStatus.DONE
    ]
    return [_waiting_for_child(d, s) for d, s in waits if d in children] + [
        _blocked_by(d, s) for d, s in waits if d not in children
    ]


def _waiting_for_child(child: str, status: TaskStatus) -> Reason:
    if status is TaskStatus.FAILED:
        return Reason(
            "child_failed",
            f"waiting for child {child}, which failed: retry it or cancel it",
        )
    return Reason("waiting_for_child", f"waiting for child {child} ({status})")


def _blocked_by(dependency: str, status: TaskStatus) -> Reason:
    if status in (TaskStatus.FAILED, TaskStatus.CANCELLED):
        return Reason(
            "dependency_dead",
            f"blocked by {dependency}, which is {status}: retry it or cancel this task",
        )
    return Reason("blocked_by", f"blocked by {dependency} ({status})")


def _ready(store: Store, task: Task, now: datetime) -> list[Reason]:
    reasons = []
    if task.run_after > now:
        wait = format_duration((task.run_after - now).total_seconds())
        reasons.append(Reason("delayed", f"delayed until {iso(task.run_after)} (in {wait})"))
    workers = [w for w in store.workers.list_workers(tuple(CLAIMING)) if _could_run(w, task)]
    at_site = [w for w in workers if task.site is not None and w.site == task.site]
    if at_site:  # the claimable filter leaves it to them (docs/review.md)
        reasons.append(Reason("kept_at_site", _kept_message(task, len(at_site))))
        workers = at_site
    if not workers:
        reasons.append(Reason("no_worker", _no_worker_message(task)))
    elif all(w.active >= w.max_concurrent for w in workers):
        who = (
            "the one worker that could run it is"
            if len(workers) == 1
            else (f"all {len(workers)} workers that could run it are")
        )
        reasons.append(Reason("workers_busy", f"{who} busy"))
    reasons += _providers_held(store, workers)
    for stat in store.queues.queue_stats(task.queue):
        if stat.held:
            reasons.append(Reason("queue_limit", f"queue {task.queue} is {stat.held}"))
    ahead = store.tasks.count_ahead(task.id)
    if ahead:
        noun = "task" if ahead == 1 else "tasks"
        reasons.append(Reason("queued", f"{ahead} {noun} ahead of it in queue {task.queue}"))
    return reasons or [Reason("claimable", "ready: the next worker that asks will claim it")]


def _providers_held(store: Store, workers: list[Worker]) -> list[Reason]:
    """The provider accounts of the workers that could run it, when every one of those
    workers spends an account that holds claims back (parked, paused, at its cap)."""
    accounts = {w.provider for w in workers}
    if not workers or None in accounts:
        return []  # some worker that could run it spends no account
    held = [s for s in store.providers.provider_states() if s.name in accounts and s.held]
    if len(held) < len(accounts):
        return []
    return [Reason("provider_held", f"provider {s.name} is {s.held}") for s in held]


def _could_run(worker: Worker, task: Task) -> bool:
    return (
        (not worker.kinds or task.kind in worker.kinds)
        and (not worker.queues or task.queue in worker.queues)
        and task.assignee in (None, worker.id, worker.name)
    )


def _kept_message(task: Task, count: int) -> str:
    who = "the worker there" if count == 1 else f"one of the {count} workers there"
    return (
        f"kept at site {task.site}, where its worktree and agent session are: {who} will claim it"
    )


def _no_worker_message(task: Task) -> str:
    who = f"worker {task.assignee}" if task.assignee else "worker"
    return f"no live {who} runs kind {task.kind!r} in queue {task.queue!r}"


def _settled(task: Task) -> Reason:
    if task.status is TaskStatus.FAILED:
        error = task.last_error or "no error recorded"
        return Reason(
            "failed",
            f"failed ({task.failure_reason}): {error}; `corral retry {task.id}` runs it again",
        )
    if task.status is TaskStatus.WAITING:
        return Reason(
            "waiting",
            f"waiting for a person: {task.wait_reason or 'no reason recorded'}; "
            f"`corral answer {task.id} [TEXT]` runs it again told TEXT, "
            f"`corral retry` runs it afresh, `corral cancel` ends it",
        )
    if task.status is TaskStatus.IN_REVIEW:
        return Reason("in_review", f"waiting for review: `corral approve {task.id}`")
    if task.status is TaskStatus.APPROVED:
        return Reason("approved", f"approved, waiting to be merged: `corral merge {task.id}`")
    return Reason(str(task.status), f"{task.status}: nothing more will run")
