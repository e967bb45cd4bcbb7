"""Reads inside a write transaction that either find their object or raise the right error.

Inside `Driver.write()` these are locking reads (driver.py), so what they return holds
until the transaction ends.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.foundation import errors
from corral.store import rows
from corral.store.driver import Driver, Row, Tx

if TYPE_CHECKING:
    from corral.model.claims import Claim
    from corral.model.tasks import Task
    from corral.model.workers import Worker


def task_in(tx: Tx, driver: Driver, task_id: str) -> Task:
    """Task `task_id`, or NotFound."""
    row = tx.one("get_task", task_id=task_id)
    if row is None:
        raise errors.NotFound("task", task_id)
    return rows.task(driver, row)


def read_task(driver: Driver, task_id: str) -> Task:
    """Task `task_id` read in its own snapshot: what write operations return, after COMMIT.

    Reading the record after the write transaction, not inside it, keeps the write lock
    for the writes alone (bench/claim_cycle.py: 4 processes then keep pace with 1).
    """
    with driver.read() as tx:
        return task_in(tx, driver, task_id)


def worker_in(tx: Tx, driver: Driver, worker_id: str) -> Worker:
    """Worker `worker_id`, or NotFound."""
    row = tx.one("get_worker", worker_id=worker_id)
    if row is None:
        raise errors.NotFound("worker", worker_id)
    return rows.worker(driver, row)


def held_claim(
    tx: Tx, driver: Driver, task_id: str, *, action: str, token: int | None, worker_id: str | None
) -> Claim:
    """The task's active claim, checked against `token` and `worker_id` when they are given.

    A token that is not the active claim's is stale; with no token the caller acts as an
    operator on whatever claim is active.
    """
    row = tx.one("active_claim", task_id=task_id)
    if row is None or (token is not None and row["token"] != token):
        raise not_held(tx, driver, task_id, action=action, token=token, row=row)
    claim = rows.claim(driver, row)
    if worker_id is not None and claim.worker_id != worker_id:
        raise errors.Refused(f"task {task_id} is held by worker {claim.worker_id}, not {worker_id}")
    return claim


def not_held(
    tx: Tx, driver: Driver, task_id: str, *, action: str, token: int | None, row: Row | None
) -> errors.CorralError:
    """Why the task has no active claim under `token`; `row` is its active claim, if any."""
    if row is not None:
        return errors.StaleToken(
            f"token {token} is stale: task {task_id} is now held under token {row['token']}"
        )
    task = task_in(tx, driver, task_id)
    if token is not None:
        return errors.StaleToken(
            f"token {token} is stale: task {task_id} has no active claim (it is {task.status})"
        )
    return errors.InvalidTransition(task_id, action, task.status)
