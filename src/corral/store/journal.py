"""Writing events: every state change records one, inside its own transaction."""

from __future__ import annotations

from typing import Any

from corral.store.driver import Json, Tx


def entry(
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
) -> dict[str, Any]:
    """Event `name` (`task.claimed`, `worker.dead` ...) as the columns it is stored in."""
    return {
        "name": name,
        "task_id": task_id,
        "worker_id": worker_id,
        "token": token,
        "from_status": from_status,
        "to_status": to_status,
        "actor": actor,
        "reason": reason,
        "data": data,
    }


def record(tx: Tx, name: str, **fields: Any) -> None:
    """Append event `name` (fields as for `entry`) at the transaction's `now`."""
    row = entry(name, **fields)
    row["data"] = Json(row["data"])
    tx.send("insert_event", **row)  # an INSERT with no conflict to check: nothing to wait for


def record_all(tx: Tx, entries: list[dict[str, Any]]) -> None:
    """Append many events (from `entry`) in their order, as one batch (`Tx.send_rows`); the
    entries are handed over: a driver may fill them in."""
    if entries:
        tx.send_rows("insert_events", entries, json_columns=("data",))
