"""One reconcile pass: `reconcile_once(store) -> ReconcileReport`.

Read a snapshot, decide with the pure `plan_recovery`, apply with compare-and-set, and
count what took effect. It is the first part of the maintenance pass
(corral.runtime.maintenance), which `corral reconcile` runs once and the orchestrator on
its interval; this function never sleeps. Two passes at once repair each thing once.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from corral.foundation.settings import Settings
from corral.model.backoff import GiveUp
from corral.model.recovery import (
    CloseClaim,
    ExpireClaim,
    FixWorkerStatus,
    MarkWorker,
    Recovery,
    RequeueOrphan,
    due_in_s,
    plan_recovery,
    plan_worker_death,
)
from corral.model.states import WorkerStatus
from corral.store import Store
from corral.store.recovery import ACTOR

DEFAULTS = Settings()


@dataclass(frozen=True, slots=True, kw_only=True)
class ReconcileReport:
    """What one pass found and fixed; every field is a count of applied repairs."""

    workers_stale: int = 0
    workers_dead: int = 0
    claims_expired: int = 0
    crashes: int = 0
    orphans_requeued: int = 0
    tasks_failed: int = 0
    tasks_quarantined: int = 0
    claims_closed: int = 0
    workers_fixed: int = 0
    reviews_stale: int = 0

    @property
    def total(self) -> int:
        """All repairs made."""
        return sum(self.to_dict().values())

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}


def reconcile_once(
    store: Store,
    *,
    settings: Settings = DEFAULTS,
    rng: random.Random | None = None,
    back_at: datetime | None = None,
) -> ReconcileReport:
    """Mark silent workers stale or dead, expire their claims, requeue orphans, fix drift,
    raise `review.stale` once for each review waiting past `review_stale_after`;
    `back_at`: when the store was reachable again after an outage, whose silence does not
    count against workers and leases (corral.model.recovery)."""
    snapshot = store.recovery.reconcile_snapshot()
    plan = plan_recovery(snapshot, settings, rng or random.Random(), back_at=back_at)
    report = summarize(store.recovery.apply_recoveries(plan))
    stale = store.review_staleness.note_stale_reviews(
        stale_after_s=settings.review_stale_after_s, actor=ACTOR
    )
    return replace(report, reviews_stale=len(stale))


def repair_due_in_s(
    store: Store, *, settings: Settings = DEFAULTS, back_at: datetime | None = None
) -> float | None:
    """Seconds until a pass would have something to repair by time alone (a silent
    worker's next mark, a lease's end), 0 if now; None if nothing ever comes due
    (corral.model.recovery.due_in_s). One snapshot read, no write."""
    snapshot = store.recovery.reconcile_snapshot()
    return due_in_s(snapshot, settings, back_at=back_at)


def recover_worker(
    store: Store,
    worker_id: str,
    *,
    reason: str,
    settings: Settings = DEFAULTS,
    rng: random.Random | None = None,
) -> ReconcileReport:
    """Declare a worker dead at once (its process is gone) and return its tasks to the queue.

    The same decisions and compare-and-set as a reconcile pass, for one worker, without
    waiting for its heartbeats to run out: crashes are counted, attempts are kept.
    """
    snapshot = store.recovery.reconcile_snapshot()
    plan = plan_worker_death(snapshot, worker_id, reason, settings, rng or random.Random())
    return summarize(store.recovery.apply_recoveries(plan))


def summarize(applied: list[Recovery]) -> ReconcileReport:
    """Count applied decisions by kind."""
    counts: dict[str, int] = dict.fromkeys(ReconcileReport.__dataclass_fields__, 0)
    for decision in applied:
        for key in _keys(decision):
            counts[key] += 1
    return ReconcileReport(**counts)


def _keys(decision: Recovery) -> list[str]:
    match decision:
        case MarkWorker(to=WorkerStatus.DEAD):
            return ["workers_dead"]
        case MarkWorker():
            return ["workers_stale"]
        case ExpireClaim():
            return [
                "claims_expired",
                *(["crashes"] if decision.crash else []),
                *_given_up(decision),
            ]
        case RequeueOrphan():
            return ["orphans_requeued", *_given_up(decision)]
        case CloseClaim():
            return ["claims_closed"]
        case FixWorkerStatus():
            return ["workers_fixed"]


def _given_up(decision: ExpireClaim | RequeueOrphan) -> list[str]:
    if not isinstance(decision.outcome, GiveUp):
        return []
    return ["tasks_quarantined" if decision.outcome.reason == "poison" else "tasks_failed"]
