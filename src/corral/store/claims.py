"""Store operations on claims: claim, claim the next task, renew, release, defer, complete, fail.

The claim queries filter by the worker's declared kinds and queues and by the task's
assignee inside the UPDATE itself, so a worker never claims a task it cannot run and
then gives it back. On PostgreSQL, `claim_next` and `complete` run the same steps as one
call of a server-side function each (cycle.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral import errors
from corral.durations import iso
from corral.model.states import ALLOWED_FROM, ClaimStatus, TaskStatus
from corral.store import journal, rows
from corral.store.capabilities import capability_filters, matches_nothing
from corral.store.claim_refusals import at_capacity, cannot_claim, claim_refusal
from corral.store.driver import Driver, Json, Row, Tx
from corral.store.lookups import held_claim, not_held, read_task, task_back, task_in
from corral.store.queues import held_reason

if TYPE_CHECKING:
    from corral.model.backoff import Outcome
    from corral.model.batches import ClaimAsk, Exchanged, Report, RunStart
    from corral.model.claims import Claim
    from corral.model.tasks import Task
    from corral.model.workers import Worker


class ClaimOps:
    """Leases and the outcomes reported under them."""

    _driver: Driver

    def claim(self, task_id: str, worker_id: str, *, lease_s: float, actor: str) -> Claim:
        """Claim task `task_id` for `worker_id`: one winner, whoever asks at once."""
        with self._driver.write() as tx:
            worker = claiming_worker(tx, self._driver, worker_id, check_capacity=False)
            if worker.active >= worker.max_concurrent:
                task = task_in(tx, self._driver, task_id)
                if task.status is not TaskStatus.READY:
                    raise claim_refusal(task, worker)
                raise at_capacity(worker.id, worker.active, worker.max_concurrent)
            row = tx.one(
                "claim_task",
                task_id=task_id,
                allowed=ALLOWED_FROM["claim"],
                **capability_filters(worker, (), ()),
            )
            if row is None:
                task = task_in(tx, self._driver, task_id)
                raise claim_refusal(task, worker, held_reason(tx, task.queue))
            claim_row = self._open_claim(tx, row, worker, lease_s, actor)
        return rows.claim(self._driver, claim_row)

    def claim_next(
        self,
        worker_id: str,
        *,
        kinds: tuple[str, ...],
        queues: tuple[str, ...],
        lease_s: float,
        actor: str,
    ) -> Claim | None:
        """Claim the first ready task `worker_id` may run, or None if there is none."""
        if self._driver.cycle_on_server:
            from corral.store.postgres import cycle

            claim_row = cycle.claim_next(
                self._driver, worker_id, kinds=kinds, queues=queues, lease_s=lease_s, actor=actor
            )
        else:
            with self._driver.write() as tx:
                claim_row = self._claim_next_here(
                    tx, worker_id, kinds=kinds, queues=queues, lease_s=lease_s, actor=actor
                )
        return None if claim_row is None else rows.claim(self._driver, claim_row)

    def _claim_next_here(
        self,
        tx: Tx,
        worker_id: str,
        *,
        kinds: tuple[str, ...],
        queues: tuple[str, ...],
        lease_s: float,
        actor: str,
    ) -> Row | None:
        """`claim_next` statement by statement: the claim's row, or None."""
        worker = claiming_worker(tx, self._driver, worker_id)
        params = capability_filters(worker, kinds, queues)
        if matches_nothing(params):
            return None
        row = tx.one("claim_next_tasks", limit=1, **params)
        return None if row is None else self._open_claim(tx, row, worker, lease_s, actor)

    def _open_claim(self, tx: Tx, row: Row, worker: Worker, lease_s: float, actor: str) -> Row:
        """Insert the claim on task `row` and record it; the claim's row, which the caller
        makes a record of after COMMIT (less work while the write lock is held)."""
        claim_row = tx.one(
            "insert_claim",
            task_id=row["id"],
            worker_id=worker.id,
            lease_s=lease_s,
            timeout_s=row["timeout_s"],
        )
        assert claim_row is not None  # an INSERT ... RETURNING always returns its row
        tx.run("worker_after_claim", worker_id=worker.id, completed=0, failed=0)
        expires_at = self._driver.instant(claim_row["lease_expires_at"])
        journal.record(
            tx,
            "task.claimed",
            actor=actor,
            task_id=row["id"],
            worker_id=worker.id,
            token=claim_row["token"],
            from_status=TaskStatus.READY,
            to_status=TaskStatus.RUNNING,
            data={"lease_expires_at": iso(expires_at)},
        )
        return claim_row

    def exchange(
        self,
        worker_id: str,
        *,
        reports: Sequence[Report] = (),
        ask: ClaimAsk | None = None,
        open_run: Callable[[Task, int, str], RunStart] | None = None,
    ) -> Exchanged:
        """Apply `reports` under their tokens, then claim what `ask` asks for, in one
        transaction (store/exchange.py says how)."""
        from corral.store.exchange import exchange

        return exchange(self._driver, worker_id, reports=reports, ask=ask, open_run=open_run)

    def active_claim(self, task_id: str) -> Claim | None:
        """The task's active claim, if any."""
        with self._driver.read() as tx:
            row = tx.one("active_claim", task_id=task_id)
            return None if row is None else rows.claim(self._driver, row)

    def renew(
        self,
        task_id: str,
        *,
        worker_id: str | None,
        token: int | None,
        lease_s: float,
        max_renewals: int,
        actor: str,
    ) -> Claim:
        """Extend the lease to now + lease_s (never past the task's deadline)."""
        with self._driver.write() as tx:
            claim = held_claim(
                tx, self._driver, task_id, action="renew", token=token, worker_id=worker_id
            )
            if claim.renewals >= max_renewals:
                raise errors.LimitReached(
                    f"the claim on task {task_id} was renewed {claim.renewals} times, "
                    f"the limit (max_renewals={max_renewals})"
                )
            row = tx.one("renew_claim", token=claim.token, lease_s=lease_s)
            assert row is not None  # held_claim saw it active inside this transaction
            renewed = rows.claim(self._driver, row)
            journal.record(
                tx,
                "task.renewed",
                actor=actor,
                task_id=task_id,
                worker_id=claim.worker_id,
                token=claim.token,
                data={"lease_expires_at": iso(renewed.lease_expires_at)},
            )
            return renewed

    def release(
        self,
        task_id: str,
        *,
        worker_id: str | None,
        token: int | None,
        reason: str | None,
        actor: str,
    ) -> Task:
        """Give the task back to the queue without counting the attempt."""
        with self._driver.write() as tx:
            claim = held_claim(
                tx, self._driver, task_id, action="release", token=token, worker_id=worker_id
            )
            end_claim(tx, claim.token, claim.worker_id, ClaimStatus.RELEASED)
            tx.run("release_task", task_id=task_id, allowed=ALLOWED_FROM["release"])
            journal.record(
                tx,
                "task.released",
                actor=actor,
                task_id=task_id,
                worker_id=claim.worker_id,
                token=claim.token,
                from_status=TaskStatus.RUNNING,
                to_status=TaskStatus.READY,
                reason=reason,
            )
        return read_task(self._driver, task_id)

    def defer(
        self,
        task_id: str,
        *,
        token: int | None,
        delay_s: float | None,
        run_at: datetime | None,
        reason: str | None,
        actor: str,
    ) -> Task:
        """Give the task back to the queue until `run_at` (or now + `delay_s`), the attempt
        not counted: the holder steps aside without failing (a usage limit, say)."""
        if (delay_s is None) == (run_at is None):
            raise errors.InvalidInput("until", "a delay or an instant, exactly one of them")
        with self._driver.write() as tx:
            claim = held_claim(
                tx, self._driver, task_id, action="defer", token=token, worker_id=None
            )
            end_claim(tx, claim.token, claim.worker_id, ClaimStatus.RELEASED)
            row = tx.one(
                "defer_task",
                task_id=task_id,
                delay_s=delay_s,
                run_at=run_at,
                allowed=ALLOWED_FROM["defer"],
            )
            assert row is not None  # the active claim implies running
            journal.record(
                tx,
                "task.deferred",
                actor=actor,
                task_id=task_id,
                worker_id=claim.worker_id,
                token=claim.token,
                from_status=TaskStatus.RUNNING,
                to_status=TaskStatus.READY,
                reason=reason,
                data={"run_after": iso(self._driver.instant(row["run_after"]))},
            )
        return read_task(self._driver, task_id)

    def complete(self, task_id: str, *, token: int | None, result: Any, actor: str) -> Task:
        """Mark the task done (or in_review when it requires review); unblock dependents."""
        if self._driver.cycle_on_server:
            from corral.store.postgres import cycle

            done = cycle.complete(self._driver, task_id, token=token, result=result, actor=actor)
            if done is not None:
                return rows.task(self._driver, done)
            # Refused, nothing changed: the steps below decide again and say why.
        with self._driver.write() as tx:
            held, holder = end_held_claim(
                tx, self._driver, task_id, action="complete", token=token, completed=1
            )
            completed = tx.send(
                "complete_task",
                task_id=task_id,
                result=Json(result),
                allowed=ALLOWED_FROM["complete"],
            )
            returned = task_back(tx, self._driver, task_id)
            row = completed.one()
            assert row is not None  # the active claim implies running
            journal.record(
                tx,
                "task.completed",
                actor=actor,
                task_id=task_id,
                worker_id=holder,
                token=held,
                from_status=TaskStatus.RUNNING,
                to_status=row["status"],
            )
            if row["status"] == TaskStatus.DONE and row["has_dependents"]:
                journal.record_all(tx, unblock_dependents(tx, [task_id], actor))
            task = None if returned is None else rows.task(self._driver, returned.one())
        return task or read_task(self._driver, task_id)

    def fail(
        self,
        task_id: str,
        *,
        token: int | None,
        error: str,
        decide: Callable[[Task], Outcome],
        actor: str,
    ) -> Task:
        """Report a failure; `decide` (a pure policy) says retry after a delay or give up."""
        with self._driver.write() as tx:
            # decide sees the task as its holder left it, claim and all.
            outcome = decide(task_in(tx, self._driver, task_id))
            held, holder = end_held_claim(
                tx, self._driver, task_id, action="fail", token=token, failed=1
            )
            apply_outcome(tx, task_id, outcome, error=error, crash=False)
            record_outcome(
                tx,
                task_id,
                worker_id=holder,
                token=held,
                outcome=outcome,
                error=error,
                actor=actor,
            )
        return read_task(self._driver, task_id)


def claiming_worker(tx: Tx, driver: Driver, worker_id: str, check_capacity: bool = True) -> Worker:
    """The claiming worker, read with a lock so that its status and capacity hold to commit."""
    row = tx.one("claiming_worker", worker_id=worker_id)
    if row is None:
        raise errors.NotFound("worker", worker_id)
    worker = rows.worker(driver, row)
    limit = worker.max_concurrent if check_capacity else None
    refusal = cannot_claim(worker.id, worker.status, worker.active, limit)
    if refusal is not None:
        raise refusal
    return worker


def end_claim(
    tx: Tx,
    token: int,
    worker_id: str,
    status: ClaimStatus,
    *,
    completed: int = 0,
    failed: int = 0,
    only_if_task_settled: bool = False,
) -> bool:
    """End active claim `token` and refresh its holder's idle/busy and counters; if it applied.

    Every way a claim ends goes through here, so a worker's status always follows its claims.
    With `only_if_task_settled`, it applies only while the task is no longer running.
    """
    applied = (
        tx.run("close_claim", token=token)
        if only_if_task_settled
        else tx.run("end_claim", token=token, status=status)
    )
    if not applied:
        return False
    tx.send("worker_after_claim", worker_id=worker_id, completed=completed, failed=failed)
    return True


def end_held_claim(
    tx: Tx,
    driver: Driver,
    task_id: str,
    *,
    action: str,
    token: int | None,
    completed: int = 0,
    failed: int = 0,
) -> tuple[int, str]:
    """Complete the task's active claim, checked against `token` as `held_claim` checks it,
    and refresh its holder; (the claim's token, its worker id).

    One statement checks and ends the claim, so the write lock is held for one round, not
    two; when it finds no claim to end, nothing changed and `not_held` says why.
    """
    row = tx.one("end_held_claim", task_id=task_id, token=token, status=ClaimStatus.COMPLETED)
    if row is None:
        found = tx.one("active_claim", task_id=task_id)
        raise not_held(tx, driver, task_id, action=action, token=token, row=found)
    tx.send("worker_after_claim", worker_id=row["worker_id"], completed=completed, failed=failed)
    return row["token"], row["worker_id"]


def apply_outcome(
    tx: Tx, task_id: str, outcome: Outcome, *, error: str, crash: bool, action: str = "fail"
) -> None:
    """Send a running task back to ready after the delay, or fail it for good."""
    from corral.model.backoff import GiveUp, Retry  # only failures need it: off the common path

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


def record_outcome(
    tx: Tx, task_id: str, *, worker_id: str, token: int, outcome: Outcome, error: str, actor: str
) -> None:
    """The event for a failure: `task.retry_scheduled` or `task.failed`."""
    from corral.model.backoff import Retry

    data: dict[str, Any]
    if isinstance(outcome, Retry):
        name, to, data = "task.retry_scheduled", TaskStatus.READY, {"delay_s": outcome.delay_s}
    else:
        name, to, data = "task.failed", TaskStatus.FAILED, {"failure_reason": outcome.reason}
    journal.record(
        tx,
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
