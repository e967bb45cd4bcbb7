"""What the reconciler decides, as pure data: `plan_recovery(snapshot, settings, rng)`.

The store takes a `Snapshot` of what may need repair, this module decides, and the store
applies each decision with a compare-and-set on what the snapshot saw, so two reconcile
passes at once repair each thing once. Decisions:

- `MarkWorker`: a silent worker becomes stale, then dead.
- `ExpireClaim`: a claim whose lease ran out, or whose holder is dead or gone, ends; its
  task retries or fails as the outcome says. A lease lost under a dead holder is a crash.
- `RequeueOrphan`: a running task with no active claim goes back to ready (or fails).
- `CloseClaim`: an active claim on a task that is no longer running ends.
- `FixWorkerStatus`: idle/busy disagrees with the worker's active claims.

After a store outage (`back_at`: when the store was reachable again), silence during it
is not held against anyone: no heartbeat could reach the store. A worker's silence counts
from `back_at` at the earliest, and a lease that ran out before then runs until a live
holder has had its full dead window (heartbeat interval times dead_after_missed) after
`back_at` to heartbeat again and extend it. A worker that really died meanwhile is
declared dead that much later.

`due_in_s(snapshot, ...)` is when the next of these decisions comes due if nothing changes
meanwhile: a watched worker's next mark (stale one missed heartbeat after its last, dead
after `dead_after_missed`) or a lease's end. The orchestrator wakes its repair then,
rather than at its next interval, so a silent worker is stale a second after its
heartbeat was due and its tasks are claimable once it is dead (seed 002: 10 s from the
last heartbeat to detection).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from corral.foundation.records import record
from corral.foundation.settings import Settings
from corral.model.backoff import GiveUp, Outcome, Retry, after_crash, delay_s
from corral.model.states import GONE, TaskStatus, WorkerStatus
from corral.model.workers import liveness, silent_until, working_status


@record(frozen=True, slots=True, kw_only=True)
class WorkerView:
    """A worker the reconciler watches."""

    id: str
    status: WorkerStatus
    last_heartbeat_at: datetime
    active: int


@record(frozen=True, slots=True, kw_only=True)
class ClaimView:
    """An active claim with what deciding its fate needs."""

    token: int
    task_id: str
    worker_id: str
    worker_status: WorkerStatus | None
    lease_expires_at: datetime
    task_status: TaskStatus
    attempts: int
    max_attempts: int
    crashes: int
    retry_base_s: float


@record(frozen=True, slots=True, kw_only=True)
class OrphanView:
    """A running task with no active claim."""

    task_id: str
    attempts: int
    max_attempts: int
    retry_base_s: float


@record(frozen=True, slots=True, kw_only=True)
class Snapshot:
    """Everything one reconcile pass looks at, read at the store's `now`."""

    now: datetime
    workers: tuple[WorkerView, ...]
    claims: tuple[ClaimView, ...]
    orphans: tuple[OrphanView, ...]


@dataclass(frozen=True, slots=True)
class MarkWorker:
    """Move worker `worker_id` from `seen` to `to` if its heartbeat is still `seen_heartbeat_at`."""

    worker_id: str
    seen: WorkerStatus
    seen_heartbeat_at: datetime
    to: WorkerStatus
    reason: str = "missed heartbeats"


@dataclass(frozen=True, slots=True)
class ExpireClaim:
    """End claim `token` (still active) and apply `outcome` to its task."""

    token: int
    task_id: str
    worker_id: str
    crash: bool
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class RequeueOrphan:
    """Return running task `task_id`, which has no active claim, per `outcome`."""

    task_id: str
    outcome: Outcome


@dataclass(frozen=True, slots=True)
class CloseClaim:
    """End active claim `token` whose task is no longer running."""

    token: int
    task_id: str
    worker_id: str


@dataclass(frozen=True, slots=True)
class FixWorkerStatus:
    """Set worker `worker_id` from `seen` to `to` (idle or busy) to match its claims."""

    worker_id: str
    seen: WorkerStatus
    to: WorkerStatus


Recovery = MarkWorker | ExpireClaim | RequeueOrphan | CloseClaim | FixWorkerStatus


def plan_recovery(
    snapshot: Snapshot,
    settings: Settings,
    rng: random.Random,
    *,
    back_at: datetime | None = None,
) -> list[Recovery]:
    """Every repair the snapshot calls for, workers first so their claims follow them;
    `back_at`: the end of a store outage, whose silence does not count (module docstring)."""
    marks = list(_mark_workers(snapshot, settings, back_at))
    dead = {m.worker_id for m in marks if m.to is WorkerStatus.DEAD}
    plan: list[Recovery] = [*marks]
    plan += _expire_claims(snapshot, dead, settings, rng, back_at)
    plan += [_requeue(o, settings, rng) for o in snapshot.orphans]
    plan += _fix_worker_statuses(snapshot, dead)
    return plan


def due_in_s(
    snapshot: Snapshot, settings: Settings, *, back_at: datetime | None = None
) -> float | None:
    """Seconds from the snapshot's time until its next decision comes due (0 if one is due
    now), or None when nothing it holds ever comes due by time alone (module docstring)."""
    times = [
        max(w.last_heartbeat_at, back_at or w.last_heartbeat_at)
        + timedelta(seconds=silent_until(w.status, settings.liveness))
        for w in snapshot.workers
    ]
    no_sooner_than = back_at + _dead_window(settings) if back_at else None
    times += [
        max(c.lease_expires_at, no_sooner_than or c.lease_expires_at)
        for c in snapshot.claims
        if c.task_status is TaskStatus.RUNNING
    ]
    if not times:
        return None
    return max(0.0, (min(times) - snapshot.now).total_seconds())


def plan_worker_death(
    snapshot: Snapshot, worker_id: str, reason: str, settings: Settings, rng: random.Random
) -> list[Recovery]:
    """A worker known dead now (its process is gone): mark it and expire its claims as crashes."""
    worker = next((w for w in snapshot.workers if w.id == worker_id), None)
    if worker is None:
        return []
    mark = MarkWorker(worker.id, worker.status, worker.last_heartbeat_at, WorkerStatus.DEAD, reason)
    mine = replace(snapshot, claims=tuple(c for c in snapshot.claims if c.worker_id == worker_id))
    return [mark, *_expire_claims(mine, {worker_id}, settings, rng)]


def _mark_workers(
    snapshot: Snapshot, settings: Settings, back_at: datetime | None
) -> list[MarkWorker]:
    marks = []
    for worker in snapshot.workers:
        heard_at = max(worker.last_heartbeat_at, back_at or worker.last_heartbeat_at)
        silent_s = (snapshot.now - heard_at).total_seconds()
        verdict = liveness(silent_s, settings.liveness)
        # A draining worker is never marked stale: a stale worker that heartbeats again
        # returns to idle and claims, which would forget the drain request.
        if verdict is WorkerStatus.STALE and worker.status is WorkerStatus.DRAINING:
            continue
        if verdict is not None and verdict is not worker.status:
            marks.append(MarkWorker(worker.id, worker.status, worker.last_heartbeat_at, verdict))
    return marks


def _expire_claims(
    snapshot: Snapshot,
    dead: set[str],
    settings: Settings,
    rng: random.Random,
    back_at: datetime | None = None,
) -> list[Recovery]:
    plan: list[Recovery] = []
    # A lease that ran out during an outage runs until its holder could have extended it.
    no_sooner_than = back_at + _dead_window(settings) if back_at else None
    for claim in snapshot.claims:
        if claim.task_status is not TaskStatus.RUNNING:
            plan.append(CloseClaim(claim.token, claim.task_id, claim.worker_id))
            continue
        holder_gone = claim.worker_id in dead or claim.worker_status in GONE | {None}
        expires_at = max(claim.lease_expires_at, no_sooner_than or claim.lease_expires_at)
        if holder_gone or expires_at <= snapshot.now:
            outcome = _claim_outcome(claim, crash=holder_gone, settings=settings, rng=rng)
            plan.append(
                ExpireClaim(claim.token, claim.task_id, claim.worker_id, holder_gone, outcome)
            )
    return plan


def _dead_window(settings: Settings) -> timedelta:
    """The silence after which a worker is dead."""
    liveness = settings.liveness
    return timedelta(seconds=liveness.heartbeat_interval_s * liveness.dead_after_missed)


def _claim_outcome(
    claim: ClaimView, *, crash: bool, settings: Settings, rng: random.Random
) -> Outcome:
    if crash:
        return after_crash(
            attempts=claim.attempts,
            max_attempts=claim.max_attempts,
            crashes=claim.crashes,
            max_crashes=settings.max_crashes,
            base_s=claim.retry_base_s,
            policy=settings.retry,
            rng=rng,
        )
    if claim.attempts >= claim.max_attempts:
        return GiveUp("lease_expired")
    return Retry(delay_s(claim.attempts, claim.retry_base_s, settings.retry, rng))


def _requeue(orphan: OrphanView, settings: Settings, rng: random.Random) -> RequeueOrphan:
    if orphan.attempts >= orphan.max_attempts:
        return RequeueOrphan(orphan.task_id, GiveUp("orphaned"))
    delay = delay_s(orphan.attempts, orphan.retry_base_s, settings.retry, rng)
    return RequeueOrphan(orphan.task_id, Retry(delay))


def _fix_worker_statuses(snapshot: Snapshot, dead: set[str]) -> list[FixWorkerStatus]:
    fixes = []
    for worker in snapshot.workers:
        if worker.id in dead or worker.status not in (WorkerStatus.IDLE, WorkerStatus.BUSY):
            continue
        expected = working_status(worker.active)
        if expected is not worker.status:
            fixes.append(FixWorkerStatus(worker.id, worker.status, expected))
    return fixes
