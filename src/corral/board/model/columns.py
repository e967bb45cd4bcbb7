"""Seed 001's task board (todo, in-progress, review, done, blocked) as a view of corral's tasks.

The board is a vocabulary, not a second state machine: every board status names one or
more of corral's states, and moving a card is one of corral's use cases
(corral.board.usecases.moves).

    corral                      board          moved to it by (PATCH status)
    blocked (dependencies)  ┐
    ready                   ┴─► todo           todo: release the claim (attempt not counted)
    running                 ──► in-progress    in-progress: claim it for the caller
    in_review, approved     ──► review         review: submit under the caller's claim
    done                    ──► done           done: complete under the caller's claim
    failed, waiting         ──► blocked        blocked: fail under the caller's claim (ready
                                               again after a backoff while attempts remain)
    cancelled               ──► cancelled      (shown only: the seed has no word for it)

The seed's `blocked` means "it failed and needs a person", which corral calls `failed`;
corral's own `blocked` (waiting on dependencies) is a `todo` card whose `blockedBy` lists
its dependencies. Instants are Unix milliseconds, as the seed's are.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from corral.foundation.durations import unix_ms
from corral.foundation.errors import InvalidInput
from corral.model.states import TaskStatus
from corral.model.tasks import Task


class BoardStatus(StrEnum):
    """A column of seed 001's board: what a PATCH may move a task to."""

    TODO = "todo"
    IN_PROGRESS = "in-progress"
    REVIEW = "review"
    DONE = "done"
    BLOCKED = "blocked"


CANCELLED = "cancelled"  # shown for corral's cancelled tasks; no PATCH moves a task there

ON_BOARD: dict[TaskStatus, str] = {
    TaskStatus.BLOCKED: BoardStatus.TODO,
    TaskStatus.READY: BoardStatus.TODO,
    TaskStatus.RUNNING: BoardStatus.IN_PROGRESS,
    TaskStatus.WAITING: BoardStatus.BLOCKED,
    TaskStatus.IN_REVIEW: BoardStatus.REVIEW,
    TaskStatus.APPROVED: BoardStatus.REVIEW,
    TaskStatus.DONE: BoardStatus.DONE,
    TaskStatus.FAILED: BoardStatus.BLOCKED,
    TaskStatus.CANCELLED: CANCELLED,
}

SHOWN = (*BoardStatus, CANCELLED)


def board_status(raw: Any) -> BoardStatus:
    """The column a PATCH names; InvalidInput naming `status` otherwise."""
    if isinstance(raw, str):
        try:
            return BoardStatus(raw)
        except ValueError:
            pass
    raise InvalidInput("status", "one of " + ", ".join(BoardStatus), raw)


def corral_statuses(shown: str) -> tuple[TaskStatus, ...]:
    """corral's states shown as the board status `shown` (a list filter); InvalidInput
    naming `status` for a word the board does not show."""
    found = tuple(s for s, board in ON_BOARD.items() if board == shown)
    if not found:
        raise InvalidInput("status", "one of " + ", ".join(SHOWN), shown)
    return found


def timeout_s(task: Task, default_s: float, max_s: float) -> float:
    """The task's timeout as the board gives it: its own, else `default_s` (the seed's
    DEFAULT_TIMEOUT); at most `max_s` (its MAX_TIMEOUT)."""
    return min(default_s if task.timeout_s is None else task.timeout_s, max_s)


def board_task(task: Task, timeout: float) -> dict[str, Any]:
    """The task as seed 001's loop reads it: its own field names, corral's beside them;
    `timeoutMs` is `timeout` (s: the one `timeout_s` gives).

    `model`, `instructions`, `deliverables` and `steps` are the payload's fields of those
    names and `workingDir` its `workdir` (what corral's runner and prompt templates read);
    `claimToken` is the active claim's fencing token, which a PATCH may name to be fenced on
    exactly that claim.
    """
    payload = task.payload
    return {
        "id": task.id,
        "title": task.title,
        "description": task.description,
        "status": ON_BOARD[task.status],
        "owner": task.assignee,
        "priority": task.priority,
        "createdAt": unix_ms(task.created_at),
        "updatedAt": unix_ms(task.updated_at),
        "model": payload.get("model"),
        "workingDir": payload.get("workdir"),
        "instructions": payload.get("instructions"),
        "deliverables": payload.get("deliverables"),
        "steps": payload.get("steps"),
        "timeoutMs": round(timeout * 1000),
        "blockedBy": list(task.depends_on) if task.status is TaskStatus.BLOCKED else [],
        "corralStatus": str(task.status),
        "queue": task.queue,
        "kind": task.kind,
        "attempts": task.attempts,
        "workerId": task.worker_id,
        "claimToken": task.token,
        "lastError": task.last_error,
        "result": task.result,
    }
