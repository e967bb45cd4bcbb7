"""Task records: what `add` takes (`NewTask`), what the store returns (`Task`), and filters.

The task state machine and its transition table are in corral.model.states; `TaskStatus`,
`FINAL` and `ALLOWED_FROM` are imported here for callers that read them with the records.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from corral import documents
from corral.durations import MAX_SPAN_S, iso
from corral.errors import InvalidInput
from corral.model.states import TaskStatus
from corral.model.subtasks import check_parentage

MAX_TITLE_CHARS = 500


@dataclass(frozen=True, slots=True, kw_only=True)
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
        documents.check("payload", self.payload)
        documents.check_text("title", self.title)
        documents.check_text("description", self.description)
        if self.max_attempts is not None and self.max_attempts < 1:
            raise InvalidInput("max_attempts", "a whole number of at least 1", self.max_attempts)
        if self.timeout_s is not None and self.timeout_s <= 0:
            raise InvalidInput("timeout", "a duration greater than zero", self.timeout_s)
        if self.run_at is not None and self.run_at.tzinfo is None:
            raise InvalidInput("run_at", "an aware datetime (with a time zone)", self.run_at)
        if len(set(self.depends_on)) != len(self.depends_on):
            raise InvalidInput("depends_on", "each dependency once")
        check_parentage(self.parent_id, self.parent_runs_first, self.depends_on)
        _check_ranges(self)


# Bounds every store can hold: an INTEGER column in any dialect, and instants that stay
# within the dates Python can read back (a task past them could never be claimed).
MAX_WHOLE = documents.MAX_INT32


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


def check_names(field_name: str, values: tuple[str, ...]) -> None:
    """Each of a worker's kinds or queues, as `check_name` checks one."""
    for value in values:
        check_name(field_name, value)


def check_name(field_name: str, value: str) -> None:
    """Queue, kind and worker names: short, printable, no spaces."""
    if not value or len(value) > 100 or not value.isprintable() or " " in value:
        raise InvalidInput(
            field_name, "a name of 1 to 100 printable characters without spaces", value
        )


@dataclass(frozen=True, slots=True, kw_only=True)
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


@dataclass(frozen=True, slots=True, kw_only=True)
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
