"""Store operations on workers: register, heartbeat, drain, deregister, read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.foundation import errors
from corral.foundation.ids import WORKER_PREFIX, new_id
from corral.model.states import (
    ALLOWED_FROM,
    WORKER_ALLOWED_FROM,
    ClaimStatus,
    TaskStatus,
    WorkerStatus,
)
from corral.store import journal, rows
from corral.store.claims import end_claim
from corral.store.driver import Driver, Json, Tx
from corral.store.lookups import worker_in
from corral.store.operations import OPERATOR, VIEWER, WORKER, Repository, served

if TYPE_CHECKING:
    from corral.model.workers import BeatFigures, NewWorker, Worker, WorkerFilter


class Workers(Repository):
    """The worker registry."""

    NAME = "workers"

    @served(WORKER, frees_work=False)
    def register_worker(self, spec: NewWorker, *, actor: str) -> Worker:
        """A new worker, `starting` until its first heartbeat."""
        with self._driver.write() as tx:
            return _register(tx, self._driver, spec, actor)

    @served(WORKER, frees_work=False)
    def slot_worker(self, spec: NewWorker, *, actor: str) -> tuple[Worker, bool]:
        """The newest live worker named `spec.name`, or else a new one of `spec`; and whether
        this call added it. One transaction, and a slot's calls take turns in it (lock_slot),
        so two first calls of one slot at once add one worker: seed 001's slots (board/)."""
        with self._driver.write() as tx:
            tx.one("lock_slot", name=spec.name)
            row = tx.one("live_worker_named", name=spec.name)
            if row is not None:
                return rows.worker(self._driver, row), False
            return _register(tx, self._driver, spec, actor), True

    @served(WORKER, owns="worker_id", frees_work=False)
    def heartbeat(self, worker_id: str, *, figures: BeatFigures, actor: str) -> Worker:
        """Record that the worker lives, with its figures, and extend its active leases (one
        transaction): its reported totals grow by the beat's deltas in the same write."""
        with self._driver.write() as tx:
            before = worker_in(tx, self._driver, worker_id)
            # Leases before the worker row: the lock order of the PostgreSQL store
            # (claims, then workers). A refused heartbeat rolls the extension back.
            tx.run("extend_worker_leases", worker_id=worker_id)
            if not tx.run(
                "heartbeat_worker",
                worker_id=worker_id,
                cpu_percent=figures.cpu_percent,
                rss_bytes=figures.rss_bytes,
                agent_cpu_percent=figures.agent_cpu_percent,
                agent_rss_bytes=figures.agent_rss_bytes,
                active=figures.active,
                completed=figures.completed,
                failed=figures.failed,
            ):
                raise errors.WorkerUnavailable(
                    f"worker {worker_id} is {before.status}: register a new worker",
                    status=before.status,
                )
            after = worker_in(tx, self._driver, worker_id)
            if after.status is not before.status and before.status in (
                WorkerStatus.STARTING,
                WorkerStatus.STALE,
            ):
                name = (
                    "worker.recovered" if before.status is WorkerStatus.STALE else "worker.started"
                )
                journal.record(
                    tx,
                    name,
                    actor=actor,
                    worker_id=worker_id,
                    from_status=before.status,
                    to_status=after.status,
                )
            return after

    @served(OPERATOR)
    def drain_worker(self, worker_id: str, *, actor: str) -> Worker:
        """Stop giving the worker new claims; it finishes what it holds."""
        with self._driver.write() as tx:
            before = worker_in(tx, self._driver, worker_id)
            if before.status is WorkerStatus.DRAINING:
                return before
            if not tx.run(
                "set_worker_status",
                worker_id=worker_id,
                to_status=WorkerStatus.DRAINING,
                reason=None,
                allowed=WORKER_ALLOWED_FROM["drain"],
            ):
                raise errors.WorkerUnavailable(
                    f"cannot drain worker {worker_id}: it is {before.status}"
                )
            journal.record(
                tx,
                "worker.draining",
                actor=actor,
                worker_id=worker_id,
                from_status=before.status,
                to_status=WorkerStatus.DRAINING,
            )
            return worker_in(tx, self._driver, worker_id)

    @served(WORKER, owns="worker_id")
    def deregister_worker(self, worker_id: str, *, reason: str, actor: str) -> Worker:
        """Take the worker offline, stamped with when (`deregistered_at`); its unfinished
        claims go back to the queue uncounted."""
        with self._driver.write() as tx:
            before = worker_in(tx, self._driver, worker_id)
            if before.status is WorkerStatus.OFFLINE:
                raise errors.WorkerUnavailable(f"worker {worker_id} is already offline")
            for row in tx.all("active_claims_of_worker", worker_id=worker_id):
                claim = rows.claim(self._driver, row)
                end_claim(tx, claim.token, worker_id, ClaimStatus.RELEASED)
                tx.run("release_task", task_id=claim.task_id, allowed=ALLOWED_FROM["release"])
                journal.record(
                    tx,
                    "task.released",
                    actor=actor,
                    task_id=claim.task_id,
                    worker_id=worker_id,
                    token=claim.token,
                    from_status=TaskStatus.RUNNING,
                    to_status=TaskStatus.READY,
                    reason="worker deregistered",
                )
            tx.run(
                "deregister_worker",
                worker_id=worker_id,
                reason=reason,
                allowed=WORKER_ALLOWED_FROM["deregister"],
            )
            journal.record(
                tx,
                "worker.offline",
                actor=actor,
                worker_id=worker_id,
                from_status=before.status,
                to_status=WorkerStatus.OFFLINE,
                reason=reason,
            )
            return worker_in(tx, self._driver, worker_id)

    @served(VIEWER)
    def get_worker(self, worker_id: str) -> Worker:
        """Worker `worker_id`, or NotFound."""
        with self._driver.read() as tx:
            return worker_in(tx, self._driver, worker_id)

    @served(VIEWER)
    def find_workers(self, flt: WorkerFilter) -> list[Worker]:
        """The workers `flt` selects, in registration order, after its cursor."""
        with self._driver.read() as tx:
            found = tx.all(
                "find_workers",
                **_worker_filters(flt),
                after_seq=flt.after_seq or 0,
                limit=flt.limit,
            )
            return [rows.worker(self._driver, r) for r in found]

    @served(VIEWER)
    def count_workers(self, flt: WorkerFilter) -> int:
        """How many workers `flt`'s filters select (its cursor and limit aside)."""
        with self._driver.read() as tx:
            row = tx.one("count_workers", **_worker_filters(flt))
            return int(row["n"]) if row else 0

    @served(VIEWER)
    def list_workers(self, statuses: tuple[WorkerStatus, ...] = ()) -> list[Worker]:
        """Workers, oldest registration first, optionally only those in `statuses`."""
        with self._driver.read() as tx:
            found = tx.all("list_workers", statuses=list(statuses) or None)
            return [rows.worker(self._driver, r) for r in found]


def _register(tx: Tx, driver: Driver, spec: NewWorker, actor: str) -> Worker:
    """Insert worker `spec`, `starting`; WorkerConflict while its process has a live twin."""
    worker_id = new_id(WORKER_PREFIX)
    inserted = tx.one(
        "insert_worker",
        id=worker_id,
        name=spec.name,
        hostname=spec.hostname,
        pid=spec.pid,
        version=spec.version,
        queues=list(spec.queues),
        kinds=list(spec.kinds),
        max_concurrent=spec.max_concurrent,
        labels=Json(spec.labels),
        pid_started_at=spec.pid_started_at,
        provider=spec.provider,
        site=spec.site,
    )
    if inserted is None:
        raise _conflict(tx, spec)
    if spec.key_hash is not None or spec.runs_key_hash is not None:
        tx.run(
            "set_worker_keys",
            worker_id=worker_id,
            key_hash=spec.key_hash,
            runs_key_hash=spec.runs_key_hash,
        )
    journal.record(
        tx,
        "worker.registered",
        actor=actor,
        worker_id=worker_id,
        to_status=WorkerStatus.STARTING,
        data={"name": spec.name, "hostname": spec.hostname, "pid": spec.pid},
    )
    return worker_in(tx, driver, worker_id)


def _worker_filters(flt: WorkerFilter) -> dict[str, Any]:
    """The worker_filters parameters of `flt` (each None when off)."""
    return {
        "statuses": [str(s) for s in flt.statuses] or None,
        "queue": flt.queue,
        "kind": flt.kind,
        "host": flt.host,
        "labels": Json(flt.labels) if flt.labels else None,
    }


def _conflict(tx: Tx, spec: NewWorker) -> errors.WorkerConflict:
    """Why `spec` was not registered: the live worker with its namespace, host and pid."""
    twin = tx.one("live_twin", hostname=spec.hostname, pid=spec.pid)
    named = f"worker {twin['id']} ({twin['name']})" if twin else "a live worker"
    return errors.WorkerConflict(
        f"{named} is live with host {spec.hostname!r} and pid {spec.pid}: one live worker "
        "per namespace, host and pid (deregister it, or wait until it is declared dead)"
    )
