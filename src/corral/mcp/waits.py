"""A tool call that waits for a person: until the caller's task leaves `waiting`.

A question or a permission request makes the caller's task wait (operations.py); the call
then reads the task every POLL_S until a person answers it (`corral answer`, the HTTP
answer route, the dashboard), someone retries or cancels it, or `wait_s` passes. Each
PROGRESS_S it tells the client it still waits (a progress notification, when the client
asked for them), so a long wait is seen to be alive.

Under a corral runner the wait ends the claim, so the runner stops the agent at its next
heartbeat; its next run resumes the session and is told the answer (as after any wait).
A permission answered then is remembered on the task (`answered_reason`): the resumed
session asking again for the same call gets the same answer at once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from corral.foundation.clock import Clock
from corral.model.states import TaskStatus
from corral.store import Store

POLL_S = 0.25
PROGRESS_S = 5.0
# The longest a call may wait: an MCP client's own request timeout usually ends it sooner.
MAX_WAIT_S = 24 * 3600.0


@dataclass(frozen=True, slots=True, kw_only=True)
class Ended:
    """How a wait ended: the task's status then, and the answer if a person gave one."""

    status: TaskStatus
    answered: bool
    answer: str | None

    def to_dict(self) -> dict[str, object]:
        """The JSON a tool returns."""
        return {"status": str(self.status), "answered": self.answered, "answer": self.answer}


def wait_for_answer(
    store: Store,
    task_id: str,
    reason: str,
    *,
    wait_s: float,
    clock: Clock,
    tick: Callable[[float], None] | None = None,
    stop: threading.Event | None = None,
) -> Ended:
    """Wait up to `wait_s` for task `task_id` to stop waiting for `reason` (or `stop` to
    be set: the call was cancelled); how it ended (`answered` only when a person answered
    that reason)."""
    stop = stop or threading.Event()
    started = clock.monotonic()
    told = started
    while True:
        task = store.tasks.get_task(task_id)
        if task.status is not TaskStatus.WAITING or task.wait_reason != reason:
            answered = task.answered_reason == reason
            answer = task.answer if answered else None
            return Ended(status=task.status, answered=answered, answer=answer)
        now = clock.monotonic()
        if now - started >= wait_s or stop.is_set():
            return Ended(status=task.status, answered=False, answer=None)
        if tick is not None and now - told >= PROGRESS_S:
            told = now
            tick(now - started)
        clock.wait(stop, min(POLL_S, max(0.0, wait_s - (now - started))))
