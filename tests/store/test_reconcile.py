"""Conformance: the reconcile pass: liveness, lost leases, crashes, poison, orphans, drift."""

# PLR0917: pytest passes fixtures as parameters.
# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from datetime import timedelta

import pytest

import corral
from corral import (
    EventFilter,
    FakeClock,
    ReconcileReport,
    Settings,
    Store,
    Task,
    TaskStatus,
    Worker,
    WorkerStatus,
)
from corral.model.backoff import Retry
from corral.model.recovery import ExpireClaim, FixWorkerStatus, plan_recovery

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
Names = Callable[..., list[str]]
Silence = Callable[[int], None]


def test_a_pass_over_a_healthy_store_repairs_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """With live workers and valid leases the report is all zeros."""
    corral.claim(store, add().id, worker().id, settings=settings)
    report = corral.reconcile_once(store, settings=settings)
    assert ReconcileReport() == report
    assert 0 == report.total


def test_a_worker_is_stale_after_one_missed_heartbeat(
    store: Store, clock: FakeClock, settings: Settings, worker: MakeWorker, events: Names
) -> None:
    """Half an interval of grace: silent for 1.4 intervals is healthy, 1.5 is stale."""
    w = worker()
    clock.advance(1.4 * settings.heartbeat_interval_s)
    assert 0 == corral.reconcile_once(store, settings=settings).total
    clock.advance(0.1 * settings.heartbeat_interval_s)
    assert ReconcileReport(workers_stale=1) == corral.reconcile_once(store, settings=settings)
    assert WorkerStatus.STALE == store.workers.get_worker(w.id).status
    assert "worker.stale" == events(worker_id=w.id)[-1]


def test_a_worker_is_dead_after_dead_after_missed_heartbeats(
    store: Store, clock: FakeClock, settings: Settings, worker: MakeWorker, events: Names
) -> None:
    """A silent worker stays stale until it has missed dead_after_missed heartbeats, then dies."""
    w = worker()
    clock.advance(1.5 * settings.heartbeat_interval_s)
    statuses = []
    for _ in range(settings.dead_after_missed):
        corral.reconcile_once(store, settings=settings)
        statuses.append(store.workers.get_worker(w.id).status)
        clock.advance(settings.heartbeat_interval_s)
    assert [WorkerStatus.STALE] * (settings.dead_after_missed - 1) + [WorkerStatus.DEAD] == statuses
    assert ["worker.registered", "worker.started", "worker.stale", "worker.dead"] == events(
        worker_id=w.id
    )


def test_a_long_silent_worker_goes_straight_to_dead(
    store: Store, settings: Settings, worker: MakeWorker, silence: Silence
) -> None:
    """One pass after a long silence marks the worker dead without a stale step."""
    w = worker()
    silence(settings.dead_after_missed)
    assert ReconcileReport(workers_dead=1) == corral.reconcile_once(store, settings=settings)
    assert WorkerStatus.DEAD == store.workers.get_worker(w.id).status


def test_a_starting_worker_that_never_heartbeats_dies_too(
    store: Store, settings: Settings, worker: MakeWorker, silence: Silence
) -> None:
    """Liveness counts from registration for a worker that never heartbeated."""
    w = worker(beat=False)
    silence(settings.dead_after_missed)
    corral.reconcile_once(store, settings=settings)
    assert WorkerStatus.DEAD == store.workers.get_worker(w.id).status


def test_a_stale_worker_keeps_its_claims(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, silence: Silence
) -> None:
    """Stale is a warning: a stale worker's unexpired leases are left alone."""
    w = worker()
    claim = corral.claim(store, add().id, w.id, settings=settings)
    silence(1)
    assert ReconcileReport(workers_stale=1) == corral.reconcile_once(store, settings=settings)
    assert claim == store.claims.active_claim(claim.task_id)


def test_claims_of_a_dead_worker_expire_and_count_a_crash(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names, silence: Silence
) -> None:
    """The dead worker's task returns to ready at once (a first crash), attempt and crash
    counted."""
    task = add()
    w = worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    silence(settings.dead_after_missed)
    report = corral.reconcile_once(store, settings=settings)
    assert ReconcileReport(workers_dead=1, claims_expired=1, crashes=1) == report
    recovered = store.tasks.get_task(task.id)
    assert (TaskStatus.READY, 1, 1, None) == (
        recovered.status,
        recovered.attempts,
        recovered.crashes,
        recovered.token,
    )
    assert store.now() == recovered.run_after
    assert f"worker {w.id} died holding it" == recovered.last_error
    assert None is store.claims.active_claim(task.id)
    assert ["task.crashed", "task.retry_scheduled"] == events(task_id=task.id)[-2:]
    [crashed] = [
        e
        for e in store.events.list_events(EventFilter(task_id=task.id))
        if e.name == "task.crashed"
    ]
    assert (claim.token, w.id, "reconciler") == (crashed.token, crashed.worker_id, crashed.actor)


def test_a_second_crash_waits_for_the_retry_backoff(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, silence: Silence
) -> None:
    """The first crash makes the task claimable at once; the second one backs off."""
    task = add(max_attempts=5)
    run_afters = []
    for i in range(2):
        corral.claim(store, task.id, worker(f"victim-{i}").id, settings=settings)
        silence(settings.dead_after_missed)
        assert 1 == corral.reconcile_once(store, settings=settings).crashes
        run_afters.append(store.tasks.get_task(task.id).run_after - store.now())
    assert [timedelta(0), timedelta(seconds=2 * settings.retry_base_s)] == run_afters


def test_a_task_that_keeps_killing_workers_is_quarantined_as_poison(
    store: Store,
    clock: FakeClock,
    settings: Settings,
    add: Add,
    worker: MakeWorker,
    silence: Silence,
) -> None:
    """After max_crashes lost leases the task fails with reason poison, attempts notwithstanding."""
    strict = dataclasses.replace(settings, max_crashes=2)
    task = add(max_attempts=10)
    reports = []
    for i in range(2):
        clock.advance(strict.retry_max_s)  # past any crash backoff
        w = worker(f"victim-{i}")
        corral.claim(store, task.id, w.id, settings=strict)
        silence(strict.dead_after_missed)
        reports.append(corral.reconcile_once(store, settings=strict))
    assert [0, 1] == [r.tasks_quarantined for r in reports]
    poisoned = store.tasks.get_task(task.id)
    assert (TaskStatus.FAILED, "poison", 2, 2) == (
        poisoned.status,
        poisoned.failure_reason,
        poisoned.crashes,
        poisoned.attempts,
    )
    [last] = store.events.list_events(EventFilter(task_id=task.id, limit=1))
    assert ("task.failed", {"failure_reason": "poison"}) == (last.name, last.data)


def test_a_crash_with_no_attempts_left_fails_the_task(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, silence: Silence
) -> None:
    """A lost lease on the last attempt fails the task with reason crashed."""
    task = add(max_attempts=1)
    corral.claim(store, task.id, worker().id, settings=settings)
    silence(settings.dead_after_missed)
    report = corral.reconcile_once(store, settings=settings)
    assert (1, 1, 0) == (report.crashes, report.tasks_failed, report.tasks_quarantined)
    failed = store.tasks.get_task(task.id)
    assert (TaskStatus.FAILED, "crashed") == (failed.status, failed.failure_reason)


def test_a_lease_past_its_deadline_expires_under_a_live_worker(
    store: Store,
    clock: FakeClock,
    settings: Settings,
    add: Add,
    worker: MakeWorker,
    events: Names,
) -> None:
    """Hung work: a heartbeating worker loses the task at its timeout, a failure not a crash."""
    task = add(timeout_s=5)
    w = worker()
    corral.claim(store, task.id, w.id, settings=settings)
    for _ in range(4):
        clock.advance(1)
        corral.heartbeat(store, w.id, settings=settings)
        assert 0 == corral.reconcile_once(store, settings=settings).total
    clock.advance(1)
    corral.heartbeat(store, w.id, settings=settings)
    report = corral.reconcile_once(store, settings=settings)
    assert ReconcileReport(claims_expired=1) == report
    expired = store.tasks.get_task(task.id)
    assert (TaskStatus.READY, 1, 0, "lease expired") == (
        expired.status,
        expired.attempts,
        expired.crashes,
        expired.last_error,
    )
    assert WorkerStatus.IDLE == store.workers.get_worker(w.id).status
    assert ["task.lease_expired", "task.retry_scheduled"] == events(task_id=task.id)[-2:]


def test_a_short_lease_expires_under_a_worker_that_is_not_yet_stale(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A lease shorter than the heartbeat interval runs out before its holder looks stale."""
    task = add()
    w = worker()
    corral.claim(store, task.id, w.id, lease_s=0.5, settings=settings)
    clock.advance(0.9)
    assert ReconcileReport(claims_expired=1) == corral.reconcile_once(store, settings=settings)
    assert WorkerStatus.IDLE == store.workers.get_worker(w.id).status


def test_a_lease_lost_on_the_last_attempt_fails_the_task(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Lease expiry with no attempts left fails the task with reason lease_expired."""
    task = add(max_attempts=1)
    corral.claim(store, task.id, worker().id, lease_s=0.5, settings=settings)
    clock.advance(0.9)
    assert ReconcileReport(claims_expired=1, tasks_failed=1) == corral.reconcile_once(
        store, settings=settings
    )
    failed = store.tasks.get_task(task.id)
    assert (TaskStatus.FAILED, "lease_expired") == (failed.status, failed.failure_reason)


def _end_claim_behind_the_tasks_back(
    store: Store, token: int, worker_id: str, task_id: str
) -> None:
    """Drift only a buggy writer could cause: end claim `token` but apply its outcome to `task_id`.

    No use case leaves a task running without its claim, so the suite makes that state with
    a deliberately mismatched decision through the store protocol: still no SQL, so every
    dialect runs it.
    """
    applied = store.recovery.apply_recoveries(
        [ExpireClaim(token, task_id, worker_id, crash=False, outcome=Retry(0.0))]
    )
    assert 1 == len(applied)


def test_an_orphaned_running_task_returns_to_ready_with_its_attempt_counted(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names
) -> None:
    """A running task without an active claim goes back to ready after a backoff."""
    task = add()
    w = worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    _end_claim_behind_the_tasks_back(store, claim.token, w.id, "t-nonexistent")
    orphan = store.tasks.get_task(task.id)
    assert (TaskStatus.RUNNING, None) == (orphan.status, orphan.token)
    report = corral.reconcile_once(store, settings=settings)
    assert ReconcileReport(orphans_requeued=1) == report
    requeued = store.tasks.get_task(task.id)
    assert (TaskStatus.READY, 1, "running with no active claim") == (
        requeued.status,
        requeued.attempts,
        requeued.last_error,
    )
    assert store.now() + timedelta(seconds=settings.retry_base_s) == requeued.run_after
    assert "task.orphan_recovered" == events(task_id=task.id)[-1]


def test_an_orphan_with_no_attempts_left_fails(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """An orphan whose attempts are used up fails with reason orphaned."""
    task = add(max_attempts=1)
    w = worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    _end_claim_behind_the_tasks_back(store, claim.token, w.id, "t-nonexistent")
    report = corral.reconcile_once(store, settings=settings)
    assert ReconcileReport(orphans_requeued=1, tasks_failed=1) == report
    failed = store.tasks.get_task(task.id)
    assert (TaskStatus.FAILED, "orphaned") == (failed.status, failed.failure_reason)


def test_a_claim_on_a_task_that_is_not_running_is_closed(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """An active claim left on a task that moved on is ended, and the task is claimable again."""
    a, b = add("a"), add("b")
    w = worker(max_concurrent=2)
    claim_a = corral.claim(store, a.id, w.id, settings=settings)
    claim_b = corral.claim(store, b.id, w.id, settings=settings)
    # a's claim ends but b moves to ready: a is orphaned and b is ready under an active claim.
    _end_claim_behind_the_tasks_back(store, claim_a.token, w.id, b.id)
    assert claim_b == store.claims.active_claim(b.id)
    report = corral.reconcile_once(store, settings=settings)
    assert ReconcileReport(orphans_requeued=1, claims_closed=1) == report
    assert None is store.claims.active_claim(b.id)
    assert claim_b.token < corral.claim(store, b.id, w.id, settings=settings).token


def test_closing_a_claim_sets_its_worker_idle_in_the_same_pass(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A closed claim refreshes its worker's status at once: no pass leaves it busy with nothing."""
    a, b = add("a"), add("b")
    w = worker(max_concurrent=2)
    claim_a = corral.claim(store, a.id, w.id, settings=settings)
    corral.claim(store, b.id, w.id, settings=settings)
    _end_claim_behind_the_tasks_back(store, claim_a.token, w.id, b.id)
    corral.reconcile_once(store, settings=settings)
    assert (WorkerStatus.IDLE, 0) == (
        store.workers.get_worker(w.id).status,
        store.workers.get_worker(w.id).active,
    )
    assert ReconcileReport() == corral.reconcile_once(store, settings=settings)


def test_a_status_fix_applies_only_while_status_and_claims_disagree(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """FixWorkerStatus is a compare-and-set: a busy worker that holds a claim is left busy."""
    w = worker()
    corral.claim(store, add("a").id, w.id, settings=settings)
    fix = FixWorkerStatus(w.id, WorkerStatus.BUSY, WorkerStatus.IDLE)
    assert [] == store.recovery.apply_recoveries([fix])
    assert WorkerStatus.BUSY == store.workers.get_worker(w.id).status


def test_a_second_pass_right_after_the_first_repairs_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names, silence: Silence
) -> None:
    """Reconcile is idempotent: back-to-back passes fix each thing once and write no more events."""
    for i in range(3):
        corral.claim(store, add(f"t{i}").id, worker(f"w{i}").id, settings=settings)
    silence(settings.dead_after_missed)
    first = corral.reconcile_once(store, settings=settings)
    seen = events()
    second = corral.reconcile_once(store, settings=settings)
    assert ReconcileReport(workers_dead=3, claims_expired=3, crashes=3) == first
    assert ReconcileReport() == second
    assert seen == events()


def test_two_reconcilers_acting_on_one_snapshot_repair_each_thing_once(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, silence: Silence
) -> None:
    """Decisions apply with compare-and-set: the second of two racing reconcilers applies none."""
    task = add()
    corral.claim(store, task.id, worker().id, settings=settings)
    silence(settings.dead_after_missed)
    snapshot = store.recovery.reconcile_snapshot()
    plans = [plan_recovery(snapshot, settings, random.Random(seed)) for seed in (1, 2)]
    assert 2 == len(store.recovery.apply_recoveries(plans[0]))
    assert [] == store.recovery.apply_recoveries(plans[1])
    assert (TaskStatus.READY, 1) == (
        store.tasks.get_task(task.id).status,
        store.tasks.get_task(task.id).crashes,
    )


def test_a_heartbeat_between_snapshot_and_apply_saves_the_worker(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, silence: Silence
) -> None:
    """A worker that heartbeats after the snapshot is not marked, whatever the plan said."""
    w = worker()
    silence(1)
    plan = plan_recovery(store.recovery.reconcile_snapshot(), settings, random.Random(0))
    corral.heartbeat(store, w.id, settings=settings)
    assert [] == store.recovery.apply_recoveries(plan)
    assert WorkerStatus.IDLE == store.workers.get_worker(w.id).status


def test_a_completion_between_snapshot_and_apply_wins(
    store: Store, clock: FakeClock, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A completion after the snapshot wins: the outdated expiry decision applies to nothing."""
    task = add()
    claim = corral.claim(store, task.id, worker().id, lease_s=0.5, settings=settings)
    clock.advance(0.9)
    plan = plan_recovery(store.recovery.reconcile_snapshot(), settings, random.Random(0))
    corral.complete(store, task.id, token=claim.token)
    assert [] == store.recovery.apply_recoveries(plan)
    assert TaskStatus.DONE == store.tasks.get_task(task.id).status


def test_the_report_shape_is_stable(store: Store, settings: Settings) -> None:
    """ReconcileReport.to_dict names every count, and total sums them."""
    report = corral.reconcile_once(store, settings=settings)
    assert [
        "workers_stale",
        "workers_dead",
        "claims_expired",
        "crashes",
        "orphans_requeued",
        "tasks_failed",
        "tasks_quarantined",
        "claims_closed",
        "workers_fixed",
        "reviews_stale",
    ] == list(report.to_dict())
    assert 6 == ReconcileReport(workers_dead=1, claims_expired=2, crashes=3).total


@pytest.mark.parametrize("status", [WorkerStatus.DRAINING, WorkerStatus.STARTING])
def test_silent_draining_and_starting_workers_are_watched(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, silence: Silence, status: str
) -> None:
    """Liveness applies to draining and starting workers too; their claims expire when they die."""
    w = worker(beat=status != WorkerStatus.STARTING)
    task = add()
    corral.claim(store, task.id, w.id, settings=settings)
    if status == WorkerStatus.DRAINING:
        corral.drain(store, w.id)
    silence(settings.dead_after_missed)
    report = corral.reconcile_once(store, settings=settings)
    assert (1, 1) == (report.workers_dead, report.crashes)
    assert TaskStatus.READY == store.tasks.get_task(task.id).status
