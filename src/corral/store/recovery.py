"""Store side of reconciliation: read a `Snapshot`, apply a plan of `Recovery` decisions.

Each decision is applied with a compare-and-set on what the snapshot saw, so a decision
made stale by another process (a heartbeat, a completion, a second reconciler) applies
to nothing. `apply_recoveries` returns only the decisions that took effect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.model.states import ALLOWED_FROM, ClaimStatus, TaskStatus, WorkerStatus
from corral.store import journal
from corral.store.claims import end_claim
from corral.store.driver import Tx
from corral.store.operations import OPERATOR, VIEWER, Repository, served
from corral.store.task_endings import apply_outcome, outcome_event

if TYPE_CHECKING:
    from corral.model.recovery import (
        CloseClaim,
        ExpireClaim,
        FixWorkerStatus,
        MarkWorker,
        Recovery,
        RequeueOrphan,
        Snapshot,
    )

ACTOR = "reconciler"


class Recoveries(Repository):
    """Reconciliation's reads and writes."""

    NAME = "recovery"

    @served(VIEWER)
    def reconcile_snapshot(self) -> Snapshot:
        """Watched workers, active claims and orphaned tasks, in one consistent read."""
        from corral.model.recovery import ClaimView, OrphanView, Snapshot, WorkerView

        d = self._driver
        with d.read() as tx:
            workers = tuple(
                WorkerView(
                    id=r["id"],
                    status=WorkerStatus(r["status"]),
                    last_heartbeat_at=d.instant(r["last_heartbeat_at"]),
                    active=r["active"],
                )
                for r in tx.all("watched_workers")
            )
            claims = tuple(
                ClaimView(
                    token=r["token"],
                    task_id=r["task_id"],
                    worker_id=r["worker_id"],
                    worker_status=None
                    if r["worker_status"] is None
                    else WorkerStatus(r["worker_status"]),
                    lease_expires_at=d.instant(r["lease_expires_at"]),
                    task_status=TaskStatus(r["task_status"]),
                    attempts=r["attempts"],
                    max_attempts=r["max_attempts"],
                    crashes=r["crashes"],
                    retry_base_s=r["retry_base_s"],
                )
                for r in tx.all("active_claims_to_check")
            )
            orphans = tuple(
                OrphanView(
                    task_id=r["id"],
                    attempts=r["attempts"],
                    max_attempts=r["max_attempts"],
                    retry_base_s=r["retry_base_s"],
                )
                for r in tx.all("orphaned_tasks")
            )
            return Snapshot(now=tx.now, workers=workers, claims=claims, orphans=orphans)

    @served(OPERATOR)
    def apply_recoveries(self, plan: list[Recovery]) -> list[Recovery]:
        """Apply each decision that still holds, all in one transaction."""
        if not plan:
            return []
        with self._driver.write() as tx:
            return [decision for decision in plan if _apply(tx, decision)]


def _apply(tx: Tx, decision: Recovery) -> bool:
    from corral.model.recovery import (
        CloseClaim,
        ExpireClaim,
        FixWorkerStatus,
        MarkWorker,
        RequeueOrphan,
    )

    match decision:
        case MarkWorker():
            return _mark_worker(tx, decision)
        case ExpireClaim():
            return _expire_claim(tx, decision)
        case RequeueOrphan():
            return _requeue_orphan(tx, decision)
        case CloseClaim():
            return _close_claim(tx, decision)
        case FixWorkerStatus():
            return _fix_worker(tx, decision)


def _mark_worker(tx: Tx, d: MarkWorker) -> bool:
    reason = d.reason
    if not tx.run(
        "mark_worker",
        worker_id=d.worker_id,
        to_status=d.to,
        seen=d.seen,
        seen_heartbeat_at=d.seen_heartbeat_at,
        reason=reason,
    ):
        return False
    if d.to is WorkerStatus.DEAD:
        _finish_runs_of_dead_worker(tx, d.worker_id, reason)
    journal.record(
        tx,
        f"worker.{d.to}",
        actor=ACTOR,
        worker_id=d.worker_id,
        from_status=d.seen,
        to_status=d.to,
        reason=reason,
    )
    return True


def _finish_runs_of_dead_worker(tx: Tx, worker_id: str, reason: str) -> None:
    """A dead worker's runs will never report: they end as killed (or as what was reported
    under their token before, by the task's own command; or, never started, as
    lease_lost), so `logs --follow` ends too."""
    error = f"worker {worker_id} died ({reason})"
    for row in tx.all("finish_runs_of_worker", worker_id=worker_id, error=error):
        journal.record(
            tx,
            "run.finished",
            actor=ACTOR,
            task_id=row["task_id"],
            worker_id=worker_id,
            token=row["token"],
            reason=row["error"],
            data={"run_id": row["id"], "outcome": row["outcome"], "exit_code": None},
        )


def _expire_claim(tx: Tx, d: ExpireClaim) -> bool:
    if not end_claim(tx, d.token, d.worker_id, ClaimStatus.EXPIRED):
        return False
    error = f"worker {d.worker_id} died holding it" if d.crash else "lease expired"
    apply_outcome(tx, d.task_id, d.outcome, error=error, crash=d.crash, action="recover")
    journal.record(
        tx,
        "task.crashed" if d.crash else "task.lease_expired",
        actor=ACTOR,
        task_id=d.task_id,
        worker_id=d.worker_id,
        token=d.token,
        reason=error,
    )
    journal.record_all(
        tx, [outcome_event(d.task_id, d.worker_id, d.token, d.outcome, error=error, actor=ACTOR)]
    )
    return True


def _requeue_orphan(tx: Tx, d: RequeueOrphan) -> bool:
    from corral.model.backoff import Retry

    retry = isinstance(d.outcome, Retry)
    to = TaskStatus.READY if retry else TaskStatus.FAILED
    error = "running with no active claim"
    if not tx.run(
        "requeue_orphan",
        task_id=d.task_id,
        to_status=to,
        delay_s=d.outcome.delay_s if isinstance(d.outcome, Retry) else 0.0,
        reason=None if isinstance(d.outcome, Retry) else d.outcome.reason,
        error=error,
        allowed=ALLOWED_FROM["recover"],
    ):
        return False
    journal.record(
        tx,
        "task.orphan_recovered",
        actor=ACTOR,
        task_id=d.task_id,
        from_status=TaskStatus.RUNNING,
        to_status=to,
        reason=error,
    )
    return True


def _close_claim(tx: Tx, d: CloseClaim) -> bool:
    if not end_claim(tx, d.token, d.worker_id, ClaimStatus.RELEASED, only_if_task_settled=True):
        return False
    journal.record(
        tx,
        "claim.closed",
        actor=ACTOR,
        task_id=d.task_id,
        token=d.token,
        reason="active claim on a task that is not running",
    )
    return True


def _fix_worker(tx: Tx, d: FixWorkerStatus) -> bool:
    if not tx.run("fix_worker_status", worker_id=d.worker_id, seen=d.seen, to_status=d.to):
        return False
    journal.record(
        tx,
        "worker.status_fixed",
        actor=ACTOR,
        worker_id=d.worker_id,
        from_status=d.seen,
        to_status=d.to,
        reason="status disagreed with active claims",
    )
    return True
