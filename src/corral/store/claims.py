"""Store operations on claims: the exchange (every claim and every reported outcome), renew,
the active claim, and why a claim or a report was refused.

Claiming and reporting are one operation, `exchange` (store/exchange.py), whether one task
or many. When it refuses (a stale token, a task nobody may claim now) it changes nothing;
the `why_*` reads then say why in the words a user reads, and the use cases (corral.usecases.claims)
raise it. Those reads run after the refused write, in a snapshot of their own: a state
that changed in between is seen as it is now, and the use case tries again.

The claim filter (kinds, queues, assignee, queue limits, sites) is inside the statements
that claim (store/claimable.py writes it once for both dialects), so a worker never claims
a task it cannot run and then gives it back.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from corral.foundation import errors
from corral.foundation.durations import iso
from corral.model.states import ClaimStatus, TaskStatus
from corral.store import journal, rows
from corral.store.capabilities import capability_filters
from corral.store.claim_refusals import claim_refusal
from corral.store.driver import Tx
from corral.store.lookups import held_claim, task_in, worker_in
from corral.store.operations import VIEWER, WORKER, Repository, served
from corral.store.queues import held_reason

if TYPE_CHECKING:
    from corral.model.claims import Claim, RunningTask
    from corral.model.exchange import ClaimAsk, Exchanged, Report, RunStart
    from corral.model.tasks import Task


class Claims(Repository):
    """Leases and the outcomes reported under them."""

    NAME = "claims"

    @served(WORKER, owns="worker_id", long_poll=True)
    def exchange(
        self,
        worker_id: str | None,
        *,
        reports: Sequence[Report] = (),
        ask: ClaimAsk | None = None,
        open_run: Callable[[Task, int, str], RunStart] | None = None,
        return_tasks: bool = False,
    ) -> Exchanged:
        """Apply `reports` under their claims, then claim what `ask` asks for, in one
        transaction (store/exchange.py says how). `worker_id` claims; reports name their
        own claims. With `return_tasks`, the applied reports' tasks come back as they are."""
        from corral.store.exchange import exchange

        return exchange(
            self._driver,
            worker_id,
            reports=reports,
            ask=ask,
            open_run=open_run,
            return_tasks=return_tasks,
        )

    @served(VIEWER)
    def why_not_held(
        self, task_id: str, *, action: str, token: int | None, holder: str | None
    ) -> errors.CorralError | None:
        """Why a report on `task_id` under `token` (and `holder`) would be refused now; None
        if it would apply (the claim it names is active)."""
        with self._driver.read() as tx:
            try:
                held_claim(tx, self._driver, task_id, action=action, token=token, worker_id=holder)
            except errors.CorralError as exc:
                return exc
        return None

    @served(VIEWER)
    def why_not_claimable(
        self, task_id: str, worker_id: str, *, full: str | None
    ) -> errors.CorralError | None:
        """Why `worker_id` cannot claim `task_id` now (`full`: it had no room); None if it can."""
        with self._driver.read() as tx:
            task = task_in(tx, self._driver, task_id)
            worker = worker_in(tx, self._driver, worker_id)
            if task.status is not TaskStatus.READY:
                return claim_refusal(task, worker)
            if full is not None:
                return errors.WorkerUnavailable(full)
            params = capability_filters(worker, (), ())
            if tx.one("claimable_task", task_id=task_id, **params) is not None:
                return None
            return claim_refusal(task, worker, held_reason(tx, task.queue))

    @served(VIEWER)
    def claim_by_token(self, token: int) -> Claim | None:
        """The claim with fencing token `token`, whatever its state, if there is one."""
        with self._driver.read() as tx:
            row = tx.one("claim_by_token", token=token)
            return None if row is None else rows.claim(self._driver, row)

    @served(VIEWER)
    def active_claim(self, task_id: str) -> Claim | None:
        """The task's active claim, if any."""
        with self._driver.read() as tx:
            row = tx.one("active_claim", task_id=task_id)
            return None if row is None else rows.claim(self._driver, row)

    @served(VIEWER)
    def running_tasks(self, limit: int) -> list[RunningTask]:
        """The oldest `limit` active claims with their tasks and unfinished runs: read through
        the active-claim index and by key, so its cost follows `limit`, not the history."""
        with self._driver.read() as tx:
            return [
                rows.running_task(self._driver, r) for r in tx.all("running_tasks", limit=limit)
            ]

    @served(WORKER, owns="worker_id")
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


def end_claim(
    tx: Tx,
    token: int,
    worker_id: str,
    status: ClaimStatus,
    *,
    completed: int = 0,
    only_if_task_settled: bool = False,
) -> bool:
    """End active claim `token` outside the exchange (cancel, deregister, review, reconcile)
    and refresh its holder's idle/busy; whether it applied.

    With `only_if_task_settled`, it applies only while the task is no longer running.
    """
    applied = (
        tx.run("close_claim", token=token)
        if only_if_task_settled
        else tx.run("end_claim", token=token, status=status)
    )
    if not applied:
        return False
    tx.send("worker_after_claim", worker_id=worker_id, completed=completed, failed=0)
    return True
