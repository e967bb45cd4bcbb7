"""The reconciler's pure decisions: `plan_recovery` over hand-built snapshots."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import random
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from corral.foundation.settings import Settings
from corral.model.backoff import GiveUp, Retry
from corral.model.recovery import (
    ClaimView,
    CloseClaim,
    ExpireClaim,
    FixWorkerStatus,
    MarkWorker,
    OrphanView,
    RequeueOrphan,
    Snapshot,
    WorkerView,
    due_in_s,
    plan_recovery,
)
from corral.model.states import TaskStatus, WorkerStatus

NOW = datetime(2030, 1, 1, tzinfo=UTC)
SETTINGS = Settings(
    heartbeat_interval_s=10.0,
    dead_after_missed=3,
    max_crashes=3,
    retry_base_s=5.0,
    retry_jitter=0.0,
)


def ago(seconds: float) -> datetime:
    """The instant `seconds` before NOW."""
    return NOW - timedelta(seconds=seconds)


def worker(
    status: WorkerStatus = WorkerStatus.BUSY,
    silent_s: float = 0.0,
    active: int = 1,
    id: str = "w-1",
) -> WorkerView:
    """A watched worker last heard from `silent_s` ago."""
    return WorkerView(id=id, status=status, last_heartbeat_at=ago(silent_s), active=active)


def claim(
    *,
    token: int = 7,
    worker_status: WorkerStatus | None = WorkerStatus.BUSY,
    expires_in_s: float = 60.0,
    task_status: TaskStatus = TaskStatus.RUNNING,
    attempts: int = 1,
    max_attempts: int = 3,
    crashes: int = 0,
) -> ClaimView:
    """An active claim by w-1 on t-1."""
    return ClaimView(
        token=token,
        task_id="t-1",
        worker_id="w-1",
        worker_status=worker_status,
        lease_expires_at=NOW + timedelta(seconds=expires_in_s),
        task_status=task_status,
        attempts=attempts,
        max_attempts=max_attempts,
        crashes=crashes,
        retry_base_s=5.0,
    )


def plan(
    workers: tuple[WorkerView, ...] = (),
    claims: tuple[ClaimView, ...] = (),
    orphans: tuple[OrphanView, ...] = (),
    settings: Settings = SETTINGS,
    back_at: datetime | None = None,
) -> list[object]:
    """The plan for a snapshot taken at NOW (`back_at`: a store outage ended then)."""
    snapshot = Snapshot(now=NOW, workers=workers, claims=claims, orphans=orphans)
    return list(plan_recovery(snapshot, settings, random.Random(0), back_at=back_at))


def test_a_healthy_snapshot_needs_nothing() -> None:
    """Live workers with valid leases and matching statuses produce an empty plan."""
    assert [] == plan(workers=(worker(silent_s=5),), claims=(claim(),))


@pytest.mark.parametrize(
    ("status", "silent_s", "to"),
    [
        (WorkerStatus.IDLE, 15, WorkerStatus.STALE),
        (WorkerStatus.BUSY, 25, WorkerStatus.STALE),
        (WorkerStatus.STARTING, 15, WorkerStatus.STALE),
        (WorkerStatus.DRAINING, 35, WorkerStatus.DEAD),
        (WorkerStatus.IDLE, 35, WorkerStatus.DEAD),
        (WorkerStatus.STALE, 35, WorkerStatus.DEAD),
    ],
)
def test_silent_workers_are_marked(status: WorkerStatus, silent_s: float, to: WorkerStatus) -> None:
    """A silent worker is marked stale or dead, with what was seen for compare-and-set."""
    w = worker(status=status, silent_s=silent_s, active=0)
    assert MarkWorker("w-1", status, ago(silent_s), to) == plan(workers=(w,))[0]


def test_a_draining_worker_is_never_marked_stale() -> None:
    """A silent draining worker stays draining until dead, so recovering cannot forget the drain."""
    assert [] == plan(workers=(worker(status=WorkerStatus.DRAINING, silent_s=25, active=0),))


def test_a_worker_already_stale_is_not_marked_again() -> None:
    """A stale worker still within the dead threshold needs no new mark."""
    assert [] == plan(workers=(worker(status=WorkerStatus.STALE, silent_s=25, active=0),))


def test_a_dead_workers_claims_expire_as_crashes_after_the_mark() -> None:
    """Marking a worker dead expires its claims in the same plan, as crashes, mark first."""
    dead = worker(status=WorkerStatus.BUSY, silent_s=40)
    assert [
        MarkWorker("w-1", WorkerStatus.BUSY, ago(40), WorkerStatus.DEAD),
        ExpireClaim(7, "t-1", "w-1", True, Retry(0.0)),
    ] == plan(workers=(dead,), claims=(claim(),))


@pytest.mark.parametrize("gone", [WorkerStatus.DEAD, WorkerStatus.OFFLINE, None])
def test_claims_of_gone_or_missing_workers_expire_as_crashes(gone: WorkerStatus | None) -> None:
    """A claim whose holder is dead, offline or missing ends as a crash, lease valid or not."""
    assert [ExpireClaim(7, "t-1", "w-1", True, Retry(0.0))] == plan(
        claims=(claim(worker_status=gone),)
    )


def test_an_expired_lease_under_a_healthy_worker_is_not_a_crash() -> None:
    """A lease that ran out while its holder lives is a plain expiry that retries."""
    assert [ExpireClaim(7, "t-1", "w-1", False, Retry(10.0))] == plan(
        workers=(worker(silent_s=1),), claims=(claim(expires_in_s=0, attempts=2),)
    )


def test_an_expired_lease_on_the_last_attempt_gives_up() -> None:
    """Lease expiry with attempts used up fails the task with reason lease_expired."""
    assert [ExpireClaim(7, "t-1", "w-1", False, GiveUp("lease_expired"))] == plan(
        workers=(worker(),), claims=(claim(expires_in_s=-5, attempts=3, max_attempts=3),)
    )


def test_the_crash_that_reaches_max_crashes_is_poison() -> None:
    """A crash with crashes + 1 == max_crashes quarantines the task as poison."""
    assert [ExpireClaim(7, "t-1", "w-1", True, GiveUp("poison"))] == plan(
        claims=(claim(worker_status=WorkerStatus.DEAD, crashes=2, max_attempts=10),)
    )


def test_a_crash_on_the_last_attempt_fails_as_crashed() -> None:
    """A crash below max_crashes with no attempts left fails with reason crashed."""
    assert [ExpireClaim(7, "t-1", "w-1", True, GiveUp("crashed"))] == plan(
        claims=(claim(worker_status=WorkerStatus.DEAD, attempts=3, max_attempts=3),)
    )


@pytest.mark.parametrize(
    "status", [TaskStatus.DONE, TaskStatus.READY, TaskStatus.CANCELLED, TaskStatus.IN_REVIEW]
)
def test_a_claim_on_a_task_that_is_not_running_is_closed(status: TaskStatus) -> None:
    """An active claim on a task that is no longer running is closed, never expired."""
    assert [CloseClaim(7, "t-1", "w-1")] == plan(
        workers=(worker(),), claims=(claim(task_status=status, expires_in_s=-100),)
    )


@pytest.mark.parametrize(
    ("attempts", "outcome"), [(1, Retry(5.0)), (2, Retry(10.0)), (3, GiveUp("orphaned"))]
)
def test_orphans_are_requeued_or_failed(attempts: int, outcome: Retry | GiveUp) -> None:
    """A running task with no active claim retries after a backoff, or fails with none left."""
    orphan = OrphanView(task_id="t-9", attempts=attempts, max_attempts=3, retry_base_s=5.0)
    assert [RequeueOrphan("t-9", outcome)] == plan(orphans=(orphan,))


@pytest.mark.parametrize(
    ("status", "active", "fixes"),
    [
        (WorkerStatus.IDLE, 1, [FixWorkerStatus("w-1", WorkerStatus.IDLE, WorkerStatus.BUSY)]),
        (WorkerStatus.BUSY, 0, [FixWorkerStatus("w-1", WorkerStatus.BUSY, WorkerStatus.IDLE)]),
        (WorkerStatus.IDLE, 0, []),
        (WorkerStatus.BUSY, 2, []),
        (WorkerStatus.DRAINING, 0, []),
        (WorkerStatus.STARTING, 1, []),
        (WorkerStatus.STALE, 0, []),
    ],
)
def test_idle_and_busy_are_fixed_to_match_active_claims(
    status: WorkerStatus, active: int, fixes: list[FixWorkerStatus]
) -> None:
    """Only idle/busy workers are corrected, and only when they disagree with their claims."""
    silent_s = 15 if status is WorkerStatus.STALE else 0
    assert fixes == plan(workers=(worker(status=status, active=active, silent_s=silent_s),))


def test_a_worker_marked_dead_is_not_also_fixed() -> None:
    """A dead-marked worker gets no status fix in the same plan."""
    dead = worker(status=WorkerStatus.BUSY, silent_s=100, active=0)
    assert [MarkWorker("w-1", WorkerStatus.BUSY, ago(100), WorkerStatus.DEAD)] == plan(
        workers=(dead,)
    )


def test_plan_is_deterministic_for_a_seeded_rng() -> None:
    """With jitter, the same snapshot and seed give the same plan."""
    jittery = Settings(retry_jitter=0.5, retry_base_s=5.0)
    second_crash = claim(worker_status=None, crashes=1)
    snapshot = Snapshot(now=NOW, workers=(), claims=(second_crash,), orphans=())
    first = plan_recovery(snapshot, jittery, random.Random(3))
    assert first == plan_recovery(snapshot, jittery, random.Random(3))
    [decision] = first
    assert isinstance(decision, ExpireClaim)
    assert isinstance(decision.outcome, Retry)
    assert 2.5 <= decision.outcome.delay_s <= 7.5


def test_silence_during_a_store_outage_does_not_make_a_worker_stale_or_dead() -> None:
    """Silent for 120 s, but the store came back 5 s ago: healthy still; 15 s ago: stale;
    35 s ago: dead, as if its silence began when the store came back."""
    silent = worker(silent_s=120)
    assert [] == plan(workers=(silent,), claims=(claim(),), back_at=ago(5))
    assert [MarkWorker("w-1", WorkerStatus.BUSY, ago(120), WorkerStatus.STALE)] == plan(
        workers=(silent,), back_at=ago(15)
    )
    assert [MarkWorker("w-1", WorkerStatus.BUSY, ago(120), WorkerStatus.DEAD)] == plan(
        workers=(silent,), back_at=ago(35)
    )


def test_a_lease_that_ran_out_during_an_outage_lasts_a_dead_window_after_it() -> None:
    """A lease expired 60 s ago, the store back 20 s ago: kept (the dead window is 30 s);
    back 30 s ago: it expires as any other."""
    expired = claim(expires_in_s=-60)
    assert [] == plan(workers=(worker(),), claims=(expired,), back_at=ago(20))
    (decision,) = plan(workers=(worker(),), claims=(expired,), back_at=ago(30))
    assert isinstance(decision, ExpireClaim)
    assert (7, False) == (decision.token, decision.crash)


@pytest.mark.parametrize(
    ("workers", "claims", "due"),
    [
        ((), (), None),  # nothing watched, no lease: only the interval wakes the repair
        ((worker(WorkerStatus.IDLE, silent_s=4, active=0),), (), 6.75),  # stale at 10.75 s
        ((worker(WorkerStatus.STALE, silent_s=20, active=0),), (), 10.75),  # dead at 30.75 s
        ((worker(WorkerStatus.DRAINING, silent_s=20, active=0),), (), 10.75),  # never stale
        ((worker(silent_s=4),), (claim(expires_in_s=3.0),), 3.0),  # the lease ends first
        ((worker(silent_s=40),), (), 0.0),  # overdue: now
    ],
)
def test_due_in_s_is_the_next_decision_a_snapshot_holds(workers, claims, due) -> None:
    """A watched worker's next mark or a running task's lease end, whichever comes first."""
    snapshot = Snapshot(now=NOW, workers=workers, claims=claims, orphans=())
    assert due == due_in_s(snapshot, SETTINGS)


@pytest.mark.parametrize("status", [WorkerStatus.IDLE, WorkerStatus.STALE, WorkerStatus.DRAINING])
def test_at_the_time_due_the_plan_has_the_decision(status: WorkerStatus) -> None:
    """Just before the time due_in_s names, nothing to do; at it, the worker is marked."""
    snapshot = Snapshot(now=NOW, workers=(worker(status, active=0),), claims=(), orphans=())
    due = due_in_s(snapshot, SETTINGS)
    assert due is not None
    later = NOW + timedelta(seconds=due)
    assert [] == plan_recovery(
        replace(snapshot, now=later - timedelta(seconds=0.01)), SETTINGS, random.Random(0)
    )
    marked = plan_recovery(replace(snapshot, now=later), SETTINGS, random.Random(0))
    assert [MarkWorker] == [type(d) for d in marked]


def test_after_an_outage_the_silence_counts_from_the_store_coming_back() -> None:
    """A worker silent for a minute when the store came back 2 s ago: stale 10.75 s after then."""
    snapshot = Snapshot(now=NOW, workers=(worker(silent_s=60),), claims=(), orphans=())
    assert 8.75 == due_in_s(snapshot, SETTINGS, back_at=ago(2))
