"""Store operations on tasks that hold no claim: enqueue, read, cancel, retry, answer."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.foundation import errors
from corral.foundation.documents import MAX_INT64
from corral.foundation.ids import TASK_PREFIX, new_id
from corral.model import subtasks
from corral.model.states import ALLOWED_FROM, CLAIMING, FINAL, ClaimStatus, TaskStatus
from corral.model.tasks import NEW_TASK_FIELDS
from corral.store import journal, rows
from corral.store.capabilities import capability_filters, matches_nothing
from corral.store.claims import end_claim
from corral.store.driver import Driver, Tx
from corral.store.lookups import held_claim, read_task, task_in
from corral.store.operations import OPERATOR, VIEWER, Repository, served
from corral.store.queues import check_room

if TYPE_CHECKING:
    from datetime import datetime

    from corral.model.task_pages import PageKey
    from corral.model.tasks import NewTask, Task, TaskFilter
    from corral.model.workers import Worker


class Tasks(Repository):
    """Enqueue and query tasks; cancel, retry and answer them."""

    NAME = "tasks"

    @served(OPERATOR)
    def enqueue(
        self,
        spec: NewTask,
        *,
        max_attempts: int,
        retry_base_s: float,
        actor: str,
        parent_token: int | None = None,
    ) -> Task:
        """Insert a task: `blocked` while a dependency is not done, else `ready`. A child
        (`spec.parent_id`) makes its parent wait for it, or waits for its parent
        (`parent_runs_first`): corral.model.subtasks. With `parent_token` (an agent adding
        a subtask of its own task), the parent's active claim must be that token's, checked
        under the parent's lock: refused as a report under that token would be."""
        with self._driver.write() as tx:
            parent = self._lock_parent(tx, spec, parent_token) if spec.parent_id else None
            check_room(tx, spec.queue)
            depends_on = _waits_for(spec)
            status = self._initial_status(tx, depends_on)
            task_id = new_id(TASK_PREFIX)
            row = task_row(
                spec,
                task_id=task_id,
                status=status,
                max_attempts=max_attempts,
                retry_base_s=retry_base_s,
            )
            insert_tasks(tx, [row])
            for dependency in depends_on:
                tx.run("insert_dependency", task_id=task_id, depends_on=dependency)
            journal.record(tx, "task.created", actor=actor, task_id=task_id, to_status=status)
            if parent is not None and not spec.parent_runs_first:
                _hold_parent(tx, parent, task_id, actor)
        return read_task(self._driver, task_id)

    def _lock_parent(self, tx: Tx, spec: NewTask, token: int | None) -> tuple[str, TaskStatus]:
        """The parent's id and status, locked, once it may take this child (and, with
        `token`, once that token's claim holds it); InvalidInput naming `parent` (or
        `depends_on`, for a circle) when it may not, the claim's refusal when not held."""
        assert spec.parent_id is not None
        row = tx.one("lock_parent", task_id=spec.parent_id)
        if row is None:
            expected = "the id of an existing task in this namespace"
            raise errors.InvalidInput("parent", expected, spec.parent_id)
        if token is not None:
            held_claim(tx, self._driver, spec.parent_id, action="add a subtask", token=token,
                       worker_id=None)  # fmt: skip
        status = TaskStatus(row["status"])
        standing = tx.all("parent_standing", task_id=spec.parent_id, max_depth=subtasks.MAX_DEPTH)
        subtasks.check_parent(
            spec.parent_id,
            status,
            depth=int(standing[0]["depth"]),
            children=int(standing[0]["children"]),
            runs_first=spec.parent_runs_first,
        )
        if not spec.parent_runs_first and spec.depends_on:
            ids = list(spec.depends_on)
            if tx.all("dependency_reaches", ids=ids, task_id=spec.parent_id)[0]["found"]:
                raise errors.InvalidInput(
                    "depends_on", f"tasks that do not wait for the parent {spec.parent_id}"
                )
        return spec.parent_id, status

    def _initial_status(self, tx: Tx, depends_on: tuple[str, ...]) -> TaskStatus:
        found = {r["id"]: r["status"] for r in tx.all("task_statuses", ids=list(depends_on))}
        for dependency in depends_on:
            if dependency not in found:
                expected = "ids of existing tasks in this namespace"
                raise errors.InvalidInput("depends_on", expected, dependency)
        waiting = any(found[d] != TaskStatus.DONE for d in depends_on)
        return TaskStatus.BLOCKED if waiting else TaskStatus.READY

    @served(VIEWER)
    def get_task(self, task_id: str) -> Task:
        """Task `task_id`, or NotFound."""
        return read_task(self._driver, task_id)

    @served(VIEWER)
    def list_tasks(self, flt: TaskFilter) -> list[Task]:
        """Tasks matching `flt`, oldest first (newest first with `flt.newest_first`)."""
        params = {
            "statuses": list(flt.statuses) or None,
            "queue": flt.queue,
            "kinds": list(flt.kinds) or None,
            "worker_id": flt.worker_id,
            "limit": flt.limit,
            "after_seq": _after(flt.after_seq, flt.newest_first),
        }
        with self._driver.read() as tx:
            if flt.parent_id is not None:
                found = tx.all(
                    "list_children",
                    parent_id=flt.parent_id,
                    newest_first=flt.newest_first,
                    **params,
                )
            elif flt.newest_first:
                found = tx.all("list_tasks_newest", **params)
            else:
                found = tx.all("list_tasks", **params)
            return [rows.task(self._driver, r) for r in found]

    @served(VIEWER)
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

    @served(VIEWER)
    def task_counts(self) -> dict[str, int]:
        """How many tasks are in each status (statuses with none are left out)."""
        with self._driver.read() as tx:
            return {row["status"]: row["n"] for row in tx.all("count_tasks_by_status")}

    @served(VIEWER)
    def next_run_after(self) -> datetime | None:
        """When the soonest ready task waiting for its `run_after` (a delay, a retry's
        backoff, a deferral) comes due, or None: no write marks that moment, so a server
        holding claims sets a timer for it."""
        with self._driver.read() as tx:
            found = tx.one("next_run_after")
        at = None if found is None else found["at"]
        return None if at is None else self._driver.instant(at)

    @served(VIEWER)
    def task_gauges(self) -> list[tuple[str, str, str, int]]:
        """(queue, kind, status, how many tasks) for each combination that has any."""
        with self._driver.read() as tx:
            found = tx.all("count_tasks_by_queue_kind_status")
        return [(r["queue"], r["kind"], r["status"], r["n"]) for r in found]

    @served(VIEWER)
    def count_tasks(self, flt: TaskFilter) -> int:
        """How many tasks match `flt`'s filters (its limit, order and cursor aside)."""
        with self._driver.read() as tx:
            row = tx.one(
                "count_tasks",
                statuses=list(flt.statuses) or None,
                queue=flt.queue,
                kinds=list(flt.kinds) or None,
                worker_id=flt.worker_id,
                parent_id=flt.parent_id,
            )
            return int(row["n"]) if row else 0

    @served(VIEWER)
    def ready_tasks(
        self,
        *,
        queue: str | None,
        kinds: tuple[str, ...],
        limit: int,
        worker: Worker | None = None,
        after: PageKey | None = None,
    ) -> list[Task]:
        """Tasks claimable now, in claim order, after the cursor `after` (the page before's
        last); with `worker`, only those it may claim."""
        params = _ready_filters(kinds, worker)
        if params is None:
            return []
        params["queue"] = queue
        with self._driver.read() as tx:
            found = []
            if after is not None:
                tied = {"priority": after.priority, "after_seq": after.seq}
                found = tx.all("ready_tasks_tied", **params, **tied, limit=limit)
            if len(found) < limit:
                below = MAX_INT64 if after is None else after.priority
                more = limit - len(found)
                found += tx.all("ready_tasks", **params, below_priority=below, limit=more)
            return [rows.task(self._driver, r) for r in found]

    @served(VIEWER)
    def count_ready(
        self, *, queue: str | None, kinds: tuple[str, ...], worker: Worker | None = None
    ) -> int:
        """How many tasks ready_tasks would list, were there no limit."""
        params = _ready_filters(kinds, worker)
        if params is None:
            return 0
        with self._driver.read() as tx:
            row = tx.one("count_ready", queue=queue, **params)
            return int(row["n"]) if row else 0

    @served(VIEWER)
    def dependency_statuses(self, task_id: str) -> list[tuple[str, TaskStatus]]:
        """(id, status) of each dependency of `task_id`."""
        with self._driver.read() as tx:
            found = tx.all("dependency_statuses", task_id=task_id)
            return [(r["id"], TaskStatus(r["status"])) for r in found]

    @served(VIEWER)
    def count_ahead(self, task_id: str) -> int:
        """Ready tasks of the same queue that would be claimed before `task_id`."""
        with self._driver.read() as tx:
            row = tx.one("count_ahead", task_id=task_id)
            return int(row[0]) if row else 0

    @served(OPERATOR)
    def cancel(self, task_id: str, *, reason: str | None, actor: str) -> Task:
        """Cancel a task that is not final, and each of its unfinished descendants in the
        same transaction; every active claim among them ends and its token goes stale."""
        with self._driver.write() as tx:
            self._cancel_descendants(tx, task_id, actor)
            _cancel_one(tx, self._driver, task_id, reason=reason, actor=actor, cascade=False)
            # A child committed between the first read of the descendants and the lock on
            # this task (PostgreSQL): none can be added now that it is cancelled.
            self._cancel_descendants(tx, task_id, actor)
        return read_task(self._driver, task_id)

    def _cancel_descendants(self, tx: Tx, task_id: str, actor: str) -> None:
        """Children before their parents, the lock order a completing child takes too."""
        below = tx.all(
            "unfinished_descendants",
            task_id=task_id,
            max_depth=subtasks.MAX_DEPTH,
            allowed=ALLOWED_FROM["cancel"],
        )
        for row in below:
            _cancel_one(
                tx,
                self._driver,
                row["id"],
                reason=f"parent {task_id} cancelled",
                actor=actor,
                cascade=True,
            )

    @served(OPERATOR)
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

    @served(OPERATOR)
    def retry(self, task_id: str, *, actor: str) -> Task:
        """Return a failed, cancelled or waiting task to the queue with a fresh attempt budget."""
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

    @served(OPERATOR)
    def answer(
        self,
        task_id: str,
        text: str | None,
        *,
        actor: str,
        budget_cost: float | None = None,
        budget_tokens: int | None = None,
    ) -> Task:
        """Send a waiting task back to ready with a person's answer (`text`; None: carry
        on), which its next runs are told with the reason it answered; its budget's dollar
        or token cap raised by `budget_cost` or `budget_tokens` in the same transaction."""
        with self._driver.write() as tx:
            task = task_in(tx, self._driver, task_id)
            if budget_cost is not None or budget_tokens is not None:
                raised = tx.one(
                    "raise_task_budget", task_id=task_id, cost=budget_cost, tokens=budget_tokens
                )
                if raised is None and task.status is not TaskStatus.WAITING:
                    raise errors.InvalidTransition(task_id, "answer", task.status)
                if raised is None:
                    cap = "cost" if budget_cost is not None else "token"
                    raise errors.InvalidInput("budget", f"a task with a {cap} cap", task_id)
            row = tx.one(
                "answer_task", task_id=task_id, answer=text, allowed=ALLOWED_FROM["answer"]
            )
            if row is None:
                raise errors.InvalidTransition(task_id, "answer", task.status)
            journal.record(
                tx,
                "task.answered",
                actor=actor,
                task_id=task_id,
                from_status=TaskStatus.WAITING,
                to_status=TaskStatus.READY,
                reason=row["answered_reason"],
                data={"answer": text, **_raise_data(budget_cost, budget_tokens)},
            )
        return read_task(self._driver, task_id)


def _raise_data(cost: float | None, tokens: int | None) -> dict[str, Any]:
    """What an answer's event says of the budget it raised, if it raised one."""
    raised = {"budget_cost_usd": cost, "budget_tokens": tokens}
    return {key: value for key, value in raised.items() if value is not None}


# The fields the insert stores as given (NewTask's table), and those of them kept as JSON.
_COLUMNS = tuple(f.name for f in NEW_TASK_FIELDS if f.column)
_JSON_COLUMNS = tuple(
    f.name for f in NEW_TASK_FIELDS if f.column and f.schema and f.schema["type"] == "object"
)


def task_row(
    spec: NewTask,
    *,
    task_id: str,
    status: TaskStatus,
    max_attempts: int,
    retry_base_s: float,
    namespace: str | None = None,
) -> dict[str, Any]:
    """The parameters of `insert_tasks` for one new task: its columns as NewTask's table
    declares them, the settings' attempts and backoff where it gives none, its start as a
    delay or an instant (seconds since the epoch), and its namespace (None: the handle's).
    Its dependencies are rows of their own (`insert_dependency`)."""
    row = {name: getattr(spec, name) for name in _COLUMNS}
    row.update(
        id=task_id,
        status=status,
        max_attempts=spec.max_attempts or max_attempts,
        retry_base_s=retry_base_s if spec.retry_base_s is None else spec.retry_base_s,
        run_after_s=spec.run_after_s,
        run_at=None if spec.run_at is None else spec.run_at.timestamp(),
        task_namespace=namespace,
    )
    return row


def insert_tasks(tx: Tx, rows: list[dict[str, Any]]) -> None:
    """Insert new tasks (`task_row`s) in one batch, in their order: the one insert path of
    enqueue and of a scheduler pass's fires."""
    tx.send_rows("insert_tasks", rows, json_columns=_JSON_COLUMNS)


def _waits_for(spec: NewTask) -> tuple[str, ...]:
    """The tasks a new task depends on: its own, and its parent when the parent runs first."""
    if spec.parent_runs_first and spec.parent_id not in spec.depends_on:
        assert spec.parent_id is not None
        return (*spec.depends_on, spec.parent_id)
    return spec.depends_on


def _hold_parent(tx: Tx, parent: tuple[str, TaskStatus], child_id: str, actor: str) -> None:
    """The parent depends on its new child; a ready parent becomes blocked (compare-and-set)."""
    parent_id, status = parent
    tx.run("insert_dependency", task_id=parent_id, depends_on=child_id)
    if not tx.run("block_parent", task_id=parent_id, allowed=ALLOWED_FROM["block"]):
        raise errors.InvalidTransition(parent_id, "block", status)
    if status is TaskStatus.READY:
        journal.record(
            tx,
            "task.blocked",
            actor=actor,
            task_id=parent_id,
            from_status=TaskStatus.READY,
            to_status=TaskStatus.BLOCKED,
            reason=f"child {child_id} added",
        )


def _cancel_one(
    tx: Tx, driver: Driver, task_id: str, *, reason: str | None, actor: str, cascade: bool
) -> None:
    """Cancel one task (its active claim ends); a parent that waited for it no longer does.
    The task cancelled by name frees its parent when nothing else holds it; one cancelled
    by the cascade leaves that to its own parent's cancel, and is passed by if it finished
    since the cascade read it."""
    task = task_in(tx, driver, task_id)
    if cascade and task.status in FINAL:
        return
    # Read by a statement of its own, after the task's lock: on PostgreSQL a claim committed
    # while task_in waited for that lock is missing from task_in's join (an older snapshot).
    claim = tx.one("active_claim", task_id=task_id)
    token = None if claim is None else int(claim["token"])
    if claim is not None:
        end_claim(tx, claim["token"], claim["worker_id"], ClaimStatus.RELEASED)
    if not tx.run("cancel_task", task_id=task_id, reason=reason, allowed=ALLOWED_FROM["cancel"]):
        raise errors.InvalidTransition(task_id, "cancel", task.status)
    journal.record(
        tx,
        "task.cancelled",
        actor=actor,
        task_id=task_id,
        token=token,
        from_status=task.status,
        to_status=TaskStatus.CANCELLED,
        reason=reason,
    )
    if task.parent_id is not None:
        tx.run("release_parent", parent_id=task.parent_id, task_id=task_id)
        if not cascade:
            _unblock(tx, task.parent_id, f"child {task_id} cancelled", actor)


def _unblock(tx: Tx, task_id: str, reason: str, actor: str) -> None:
    if tx.run("unblock_task", task_id=task_id, allowed=ALLOWED_FROM["unblock"]):
        journal.record(
            tx,
            "task.unblocked",
            actor=actor,
            task_id=task_id,
            from_status=TaskStatus.BLOCKED,
            to_status=TaskStatus.READY,
            reason=reason,
        )


def _ready_filters(kinds: tuple[str, ...], worker: Worker | None) -> dict[str, Any] | None:
    """The ready_filters parameters; None when `worker` may claim nothing at all."""
    if worker is None:
        return {
            "worker_id": None,
            "worker_name": None,
            "queues": None,
            "kinds": list(kinds) or None,
        }
    params = capability_filters(worker, kinds, ())
    if worker.status not in CLAIMING or matches_nothing(params):
        return None
    return params


def _after(seq: int | None, newest_first: bool) -> int:
    """The keyset bound of a task listing: the cursor, else one past either end."""
    if seq is not None:
        return seq
    return MAX_INT64 if newest_first else 0
