"""Task records: what `add` takes (`NewTask`), what the store returns (`Task`), and filters.

The task state machine and its transition table are in corral.model.states; `TaskStatus`,
`FINAL` and `ALLOWED_FROM` are imported here for callers that read them with the records.

A new task's shape is declared once: `NewTask` gives each field its type, default and
checks, and `NEW_TASK_FIELDS` (one row per field, in NewTask's order) says how it is
given and kept. From that table come the fields of POST /api/tasks and their JSON types
(server/tasks.py), the OpenAPI schema of a new task (server/openapi.py), the fields a
schedule's template may carry (model/schedules.py) and the parameters of `insert_tasks`,
the one insert that enqueue and schedule fires share (store/tasks.py `task_row`). What
stays apart, and why: the `tasks` table in each schema.sql (a column is a migration),
and `Task` with its row conversion (store/rows.py): what the store returns is more than
what a new task takes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from corral.foundation import documents
from corral.foundation.durations import MAX_SPAN_S, check_instant, iso
from corral.foundation.errors import InvalidInput
from corral.foundation.records import field, record

# check_name and check_names are imported from here by their older callers (model/names.py).
from corral.model.names import check_name as check_name  # noqa: PLC0414 - re-exported
from corral.model.names import check_names as check_names  # noqa: PLC0414 - re-exported
from corral.model.names import check_worker_name
from corral.model.states import TaskStatus
from corral.model.subtasks import check_parentage

MAX_TITLE_CHARS = 500


@record(frozen=True, slots=True, kw_only=True)
class NewTask:
    """What `enqueue` needs; validated on construction so the store never sees bad input."""

    title: str
    description: str = ""
    queue: str = "default"
    kind: str = "default"
    priority: int = 0
    payload: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()
    assignee: str | None = None
    parent_id: str | None = None
    parent_runs_first: bool = False  # the child waits for its parent, not the other way
    max_attempts: int | None = None
    retry_base_s: float | None = None
    timeout_s: float | None = None
    run_after_s: float = 0.0
    run_at: datetime | None = None  # an exact instant; when given it wins over run_after_s
    requires_review: bool = False

    def __post_init__(self) -> None:
        if not self.title.strip():
            raise InvalidInput("title", "a non-empty title")
        if len(self.title) > MAX_TITLE_CHARS:
            raise InvalidInput("title", f"at most {MAX_TITLE_CHARS} characters")
        for name in ("queue", "kind"):
            check_name(name, getattr(self, name))
        if isinstance(self.priority, bool) or not isinstance(self.priority, int):
            raise InvalidInput("priority", "a whole number", self.priority)
        if not isinstance(self.payload, dict):
            raise InvalidInput("payload", "a JSON object", self.payload)
        _check_payload(self.payload)
        documents.check_text("title", self.title)
        documents.check_text("description", self.description)
        if self.max_attempts is not None and self.max_attempts < 1:
            raise InvalidInput("max_attempts", "a whole number of at least 1", self.max_attempts)
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise InvalidInput("timeout", "a duration greater than zero", self.timeout_s)
        if self.assignee is not None:
            check_worker_name("assignee", self.assignee)
        if len(set(self.depends_on)) != len(self.depends_on):
            raise InvalidInput("depends_on", "each dependency once")
        check_parentage(self.parent_id, self.parent_runs_first, self.depends_on)
        _check_ranges(self)


@record(frozen=True, slots=True, kw_only=True)
class TaskField:
    """How one field of NewTask is given and kept: a row of NEW_TASK_FIELDS."""

    name: str
    doc: str  # one line, the OpenAPI description
    # Its value's JSON Schema in POST /api/tasks, whose JSON types the route checks (a
    # bool is no number there); None: not taken over HTTP.
    schema: dict[str, Any] | None = None
    template: bool = False  # a schedule's template may carry it
    # The insert stores it as given, in the `tasks` column of its name (an object as
    # JSON); False: the insert derives what it keeps (store/tasks.py `task_row`).
    column: bool = True


_STRING: dict[str, Any] = {"type": "string"}
_INTEGER: dict[str, Any] = {"type": "integer"}
_BOOLEAN: dict[str, Any] = {"type": "boolean"}
_OBJECT: dict[str, Any] = {"type": "object"}

# One row per field of NewTask, in its order (the order the 422 of an unknown field names
# them in); tests/unit/test_task_shape.py checks the table and the record agree. Each
# schema's bounds are what the document promises; NewTask's checks hold the rest (a name's
# characters, the numbers a store holds), whatever path a task comes by.
T = TaskField
NEW_TASK_FIELDS: tuple[TaskField, ...] = (
    T(name="title", doc="one line that says what to do", template=True,
      schema={**_STRING, "minLength": 1}),
    T(name="description", doc="the longer text", schema=_STRING, template=True),
    T(name="queue", doc="the queue it waits in", schema=_STRING, template=True),
    T(name="kind", doc="what a worker must run", schema=_STRING, template=True),
    T(name="priority", doc="higher is claimed first", schema=_INTEGER, template=True),
    T(name="payload", doc="a JSON object handed to the worker", schema=_OBJECT, template=True),
    T(name="labels", doc="names and values to find it by", template=True,
      schema={**_OBJECT, "additionalProperties": _STRING}),
    T(name="depends_on", doc="tasks that must be done first", column=False,
      schema={"type": "array", "items": _STRING}),
    T(name="assignee", doc="only this worker (id or name) may claim it", schema=_STRING),
    T(name="parent_id", doc="its parent: it waits for this child", schema=_STRING),
    T(name="parent_runs_first", doc="with parent_id: this child waits for its parent instead",
      schema=_BOOLEAN, column=False),
    T(name="max_attempts", doc="runs before it fails for good (default: the settings')",
      schema={**_INTEGER, "minimum": 1}, column=False),
    T(name="retry_base_s", doc="the first retry's delay in seconds, doubling", column=False),
    T(name="timeout_s", doc="the longest a run may take, in seconds",
      schema={"type": "number", "exclusiveMinimum": 0}),
    T(name="run_after_s", doc="seconds from now before it may run", column=False,
      schema={"type": "number", "minimum": 0}),
    T(name="run_at", doc="the instant it may run; wins over run_after_s", column=False),
    T(name="requires_review", doc="a person approves its work before it is done",
      schema=_BOOLEAN, template=True),
)  # fmt: skip
del T


def new_task_required() -> list[str]:
    """The fields a NewTask must be given: those with no default."""
    from dataclasses import MISSING, fields  # noqa: PLC0415 - the HTTP routes' alone (corral.foundation.records)

    return [
        f.name for f in fields(NewTask) if f.default is MISSING and f.default_factory is MISSING
    ]


# Bounds every store can hold: an INTEGER column in any dialect, and instants that stay
# within the dates Python can read back (a task past them could never be claimed).
MAX_WHOLE = documents.MAX_INT32


def _check_payload(payload: dict[str, Any]) -> None:
    """A payload a store can hold, and its budget (model/budgets.py) as a worker reads it."""
    documents.check("payload", payload)
    if "budget" in payload:
        from corral.model.budgets import budget_of  # noqa: PLC0415 - a task with a budget only

        budget_of(payload)


def _check_ranges(spec: NewTask) -> None:
    """Numbers within what the stores hold; the comparisons are written so NaN fails too."""
    if not -MAX_WHOLE - 1 <= spec.priority <= MAX_WHOLE:
        raise InvalidInput(
            "priority", f"a whole number from {-MAX_WHOLE - 1} to {MAX_WHOLE}", spec.priority
        )
    if spec.max_attempts is not None and spec.max_attempts > MAX_WHOLE:
        raise InvalidInput("max_attempts", f"at most {MAX_WHOLE}", spec.max_attempts)
    for name, value in (("timeout", spec.timeout_s), ("run_after", spec.run_after_s)):
        if value is not None and not value <= MAX_SPAN_S:
            raise InvalidInput(name, "a duration of at most 100 years", value)
    if spec.run_at is not None:
        check_instant("run_at", spec.run_at)


@record(frozen=True, slots=True, kw_only=True)
class Task:
    """A task as the store last saw it; `worker_id` and `token` name its active claim, if any."""

    id: str
    title: str
    description: str
    queue: str
    kind: str
    priority: int
    status: TaskStatus
    payload: dict[str, Any]
    labels: dict[str, str]
    depends_on: tuple[str, ...]
    assignee: str | None
    parent_id: str | None
    attempts: int
    max_attempts: int
    crashes: int
    retry_base_s: float
    timeout_s: float | None
    run_after: datetime
    requires_review: bool
    branch: str | None
    result: Any
    last_error: str | None
    failure_reason: str | None
    worker_id: str | None
    token: int | None
    lease_expires_at: datetime | None
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    seq: int = 0  # its place in the order tasks were added: the key `list` pages by
    wait_reason: str | None = None  # while it is waiting: why (model/waiting.py)
    answer: str | None = None  # a person's answer to why it waited (None: none, or no text) ...
    answered_reason: str | None = None  # ... and that reason; both told to its next runs
    # Where its worktree and its agent's session are, `<hostname>:<clone>`, once a run of
    # it entered a worktree: claimed there while a worker of that site can run it.
    site: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "id": self.id,
            "title": self.title,
            "description": self.description,
            "status": str(self.status),
            "queue": self.queue,
            "kind": self.kind,
            "priority": self.priority,
            "attempts": self.attempts,
            "max_attempts": self.max_attempts,
            "crashes": self.crashes,
            "payload": self.payload,
            "labels": self.labels,
            "depends_on": list(self.depends_on),
            "assignee": self.assignee,
            "parent_id": self.parent_id,
            "timeout_s": self.timeout_s,
            "retry_base_s": self.retry_base_s,
            "run_after": iso(self.run_after),
            "requires_review": self.requires_review,
            "branch": self.branch,
            "result": self.result,
            "last_error": self.last_error,
            "failure_reason": self.failure_reason,
            "worker_id": self.worker_id,
            "token": self.token,
            "lease_expires_at": iso(self.lease_expires_at),
            "created_at": iso(self.created_at),
            "updated_at": iso(self.updated_at),
            "finished_at": iso(self.finished_at),
            "wait_reason": self.wait_reason,
            "answer": self.answer,
            "answered_reason": self.answered_reason,
            "site": self.site,
        }


@record(frozen=True, slots=True, kw_only=True)
class TaskFilter:
    """Which tasks `list` returns."""

    statuses: tuple[TaskStatus, ...] = ()
    queue: str | None = None
    kinds: tuple[str, ...] = ()
    worker_id: str | None = None
    parent_id: str | None = None
    limit: int = 1000
    newest_first: bool = False
    after_seq: int | None = None  # the page before's last task (Task.seq): the ones past it
