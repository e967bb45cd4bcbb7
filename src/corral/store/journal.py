"""Writing events: every state change records one, inside its own transaction."""

from __future__ import annotations

from typing import Any

from corral.store.base import Json, Tx


def record(
    tx: Tx,
    name: str,
    *,
    actor: str,
    task_id: str | None = None,
    worker_id: str | None = None,
    token: int | None = None,
    from_status: str | None = None,
    to_status: str | None = None,
    reason: str | None = None,
    data: dict[str, Any] | None = None,
) -> None:
    """Append event `name` (`task.claimed`, `worker.dead` ...) at the transaction's `now`."""
    tx.run(
        "insert_event",
        name=name,
        task_id=task_id,
        worker_id=worker_id,
        token=token,
        from_status=from_status,
        to_status=to_status,
        actor=actor,
        reason=reason,
        data=Json(data),
    )
