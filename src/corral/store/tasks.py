"""Store operations on tasks that hold no claim: enqueue, read, cancel, retry."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral import errors
from corral.ids import TASK_PREFIX, new_id
from corral.model.states import ALLOWED_FROM, CLAIMING, ClaimStatus, TaskStatus
from corral.store import journal, rows
from corral.store.capabilities import capability_filters, matches_nothing
from corral.store.claims import end_claim
from corral.store.driver import Driver, Json, Tx
from corral.store.lookups import read_task, task_in
from corral.store.queues import check_room

if TYPE_CHECKING:
    from datetime import datetime

    from corral.model.tasks import NewTask, Task, TaskFilter
    from corral.model.workers import Worker


class TaskOps:
    """Enqueue and query tasks; cancel and retry them."""

    _driver: Driver

    def enqueue(self, spec: NewTask, *, max_attempts: int, retry_base_s: float, actor: str) -> Task:
        """Insert a task: `blocked` while a dependency is not done, else `ready`."""
        with self._driver.write() as tx:
            check_room(tx, spec.queue)
            status = self._initial_status(tx, spec)
            task_id = new_id(TASK_PREFIX)
            tx.run(
                "insert_task",
                id=task_id,
                title=spec.title,
                description=spec.description,
                queue=spec.queue,
                kind=spec.kind,
                priority=spec.priority,
                status=status,
                payload=Json(spec.payload),
                labels=Json(spec.labels),
                assignee=spec.assignee,
                parent_id=spec.parent_id,
                max_attempts=spec.max_attempts or max_attempts,
                retry_base_s=spec.retry_base_s if spec.retry_base_s is not None else retry_base_s,
                timeout_s=spec.timeout_s,
                run_after_s=spec.run_after_s,
                run_at=spec.run_at,
                requires_review=spec.requires_review,
            )
            for dependency in spec.depends_on:
                tx.run("insert_dependency", task_id=task_id, depends_on=dependency)
            journal.record(tx, "task.created", actor=actor, task_id=task_id, to_status=status)
        return read_task(self._driver, task_id)

    def _initial_status(self, tx: Tx, spec: NewTask) -> TaskStatus:
        wanted = [*spec.depends_on, *([spec.parent_id] if spec.parent_id else [])]
        found = {r["id"]: r["status"] for r in tx.all("task_statuses", ids=wanted)}
        if spec.parent_id and spec.parent_id not in found:
            expected = "the id of an existing task in this namespace"
            raise errors.InvalidInput("parent", expected, spec.parent_id)
        for dependency in spec.depends_on:
            if dependency not in found:
                expected = "ids of existing tasks in this namespace"
                raise errors.InvalidInput("depends_on", expected, dependency)
        waiting = any(found[d] != TaskStatus.DONE for d in spec.depends_on)
        return TaskStatus.BLOCKED if waiting else TaskStatus.READY

    def get_task(self, task_id: str) -> Task:
        """Task `task_id`, or NotFound."""
        return read_task(self._driver, task_id)

    def list_tasks(self, flt: TaskFilter) -> list[Task]:
        """Tasks matching `flt`, oldest first (newest first with `flt.newest_first`)."""
        params = {
            "statuses": list(flt.statuses) or None,
            "queue": flt.queue,
            "kinds": list(flt.kinds) or None,
            "worker_id": flt.worker_id,
            "limit": flt.limit,
        }
        with self._driver.read() as tx:
            if flt.newest_first:
                found = tx.all("list_tasks_newest", **params)
            else:
                found = tx.all("list_tasks", **params)
            return [rows.task(self._driver, r) for r in found]

    def tasks_with_payload(self, kind: str, field: str, value: str, limit: int) -> list[Task]:
        """Tasks of `kind` whose payload's top-level `field` is the text `value`, newest first."""
        with self._driver.read() as tx:
            found = tx.all(
                "tasks_with_payload",
                kind=kind,
                field=field,
                path=f'$."{field}"',
                value=value,
                limit=limit,
            )
            return [rows.task(self._driver, r) for r in found]

    def task_counts(self) -> dict[str, int]:
        """How many tasks are in each status (statuses with none are left out)."""
        with self._driver.read() as tx:
            return {row["status"]: row["n"] for row in tx.all("count_tasks_by_status")}

    def next_run_after(self) -> datetime | None:
        """When the soonest ready task waiting for its `run_after` (a delay, a retry's
        backoff, a deferral) comes due, or None: no write marks that moment, so a server
        holding claims sets a timer for it."""
        with self._driver.read() as tx:
            found = tx.one("next_run_after")
        at = None if found is None else found["at"]
        return None if at is None else self._driver.instant(at)

    def task_gauges(self) -> list[tuple[str, str, str, int]]:
        """(queue, kind, status, how many tasks) for each combination that has any."""
        with self._driver.read() as tx:
            found = tx.all("count_tasks_by_queue_kind_status")
        return [(r["queue"], r["kind"], r["status"], r["n"]) for r in found]

    def ready_tasks(
        self, *, queue: str | None, kinds: tuple[str, ...], limit: int, worker: Worker | None = None
    ) -> list[Task]:
        """Tasks claimable now, in claim order; with `worker`, only those it may claim."""
        if worker is None:
            params: dict[str, Any] = {"worker_id": None, "worker_name": None, "queues": None}
            params["kinds"] = list(kinds) or None
        else:
            params = capability_filters(worker, kinds, ())
            if worker.status not in CLAIMING or matches_nothing(params):
                return []
        with self._driver.read() as tx:
            found = tx.all("ready_tasks", queue=queue, limit=limit, **params)
            return [rows.task(self._driver, r) for r in found]

    def dependency_statuses(self, task_id: str) -> list[tuple[str, TaskStatus]]:
        """(id, status) of each dependency of `task_id`."""
        with self._driver.read() as tx:
            found = tx.all("dependency_statuses", task_id=task_id)
            return [(r["id"], TaskStatus(r["status"])) for r in found]

    def count_ahead(self, task_id: str) -> int:
        """Ready tasks of the same queue that would be claimed before `task_id`."""
        with self._driver.read() as tx:
            row = tx.one("count_ahead", task_id=task_id)
            return int(row[0]) if row else 0

    def cancel(self, task_id: str, *, reason: str | None, actor: str) -> Task:
        """Cancel a task that is not final; an active claim ends and its token goes stale."""
        with self._driver.write() as tx:
            task = task_in(tx, self._driver, task_id)
            if task.token is not None:
                assert task.worker_id is not None  # an active claim names its holder
                end_claim(tx, task.token, task.worker_id, ClaimStatus.RELEASED)
            if not tx.run(
                "cancel_task", task_id=task_id, reason=reason, allowed=ALLOWED_FROM["cancel"]
            ):
                raise errors.InvalidTransition(task_id, "cancel", task.status)
            journal.record(
                tx,
                "task.cancelled",
                actor=actor,
                task_id=task_id,
                token=task.token,
                from_status=task.status,
                to_status=TaskStatus.CANCELLED,
                reason=reason,
            )
        return read_task(self._driver, task_id)

    def set_task_priority(self, task_id: str, priority: int, *, actor: str) -> Task:
        """Give a task that is not final a new priority (its claim order follows)."""
        with self._driver.write() as tx:
            was = task_in(tx, self._driver, task_id)
            changed = tx.run(
                "set_task_priority",
                task_id=task_id,
                priority=priority,
                allowed=ALLOWED_FROM["reprioritise"],
            )
            if not changed:
                raise errors.InvalidTransition(task_id, "reprioritise", was.status)
            change = {"from": was.priority, "to": priority}
            journal.record(tx, "task.reprioritised", actor=actor, task_id=task_id, data=change)
        return read_task(self._driver, task_id)

    def retry(self, task_id: str, *, actor: str) -> Task:
        """Return a failed or cancelled task to the queue with a fresh attempt budget."""
        with self._driver.write() as tx:
            task = task_in(tx, self._driver, task_id)
            row = tx.one("retry_task", task_id=task_id, allowed=ALLOWED_FROM["retry"])
            if row is None:
                raise errors.InvalidTransition(task_id, "retry", task.status)
            journal.record(
                tx,
                "task.retried",
                actor=actor,
                task_id=task_id,
                from_status=task.status,
                to_status=row["status"],
            )
        return read_task(self._driver, task_id)
