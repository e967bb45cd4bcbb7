"""What a failure or a completion does to a task besides ending its claim: the retry or the
failure, its event, and the dependents it frees. Shared by the exchange, the reconciler
and the review flow, each inside its own transaction.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.model.states import ALLOWED_FROM, TaskStatus
from corral.store import journal
from corral.store.driver import Tx

if TYPE_CHECKING:
    from corral.model.backoff import Outcome


def apply_outcome(
    tx: Tx, task_id: str, outcome: Outcome, *, error: str, crash: bool, action: str = "fail"
) -> None:
    """Send a running task back to ready after the delay, or fail it for good."""
    # Every command imports this module; only a failure needs the retry records.
    from corral.model.backoff import GiveUp, Retry  # noqa: PLC0415

    retry = isinstance(outcome, Retry)
    tx.run(
        "fail_task",
        task_id=task_id,
        to_status=TaskStatus.READY if retry else TaskStatus.FAILED,
        delay_s=outcome.delay_s if isinstance(outcome, Retry) else 0.0,
        reason=outcome.reason if isinstance(outcome, GiveUp) else None,
        error=error,
        crash=int(crash),
        allowed=ALLOWED_FROM[action],
    )


def outcome_event(
    task_id: str, worker_id: str, token: int, outcome: Outcome, *, error: str, actor: str
) -> dict[str, Any]:
    """The event of a failure: `task.retry_scheduled` or `task.failed`."""
    from corral.model.backoff import Retry  # noqa: PLC0415 - as above

    data: dict[str, Any]
    if isinstance(outcome, Retry):
        name, to, data = "task.retry_scheduled", TaskStatus.READY, {"delay_s": outcome.delay_s}
    else:
        name, to, data = "task.failed", TaskStatus.FAILED, {"failure_reason": outcome.reason}
    return journal.entry(
        name,
        actor=actor,
        task_id=task_id,
        worker_id=worker_id,
        token=token,
        from_status=TaskStatus.RUNNING,
        to_status=to,
        reason=error,
        data=data,
    )


def unblock_dependents(tx: Tx, task_ids: list[str], actor: str) -> list[dict[str, Any]]:
    """Move tasks whose last pending dependency was one of `task_ids` from blocked to ready;
    the events to record for them."""
    found = tx.all("unblock_dependents", task_ids=task_ids, allowed=ALLOWED_FROM["unblock"])
    return [
        journal.entry(
            "task.unblocked",
            actor=actor,
            task_id=row["id"],
            from_status=TaskStatus.BLOCKED,
            to_status=TaskStatus.READY,
            reason=f"{row['unblocked_by']} done",
        )
        for row in found
    ]
