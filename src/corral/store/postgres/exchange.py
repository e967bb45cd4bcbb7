"""The exchange on PostgreSQL: one call of the server-side function `corral_exchange`.

Why: on PostgreSQL every statement costs server CPU and a client round trip, whether or
not the client waits for it (bench/pg_claim_cycle.py). The exchange's steps
(store/exchange.py), run one statement at a time, cost a dozen statements; as one function
(sql/postgresql/functions.sql) they cost one call, a transaction of its own in autocommit
(`Driver.call`). So a runner on PostgreSQL pays one round trip a task however many tasks
it reports and claims, and `corral done` one round trip in all.

The function decides nothing the store does not hand it: failures arrive with their retry
decided, a completion's review or done as a table of the decision (`completed_to`,
model/exchange.py), a report from outside a run with what its run notes (`reported`), the
statuses each step may start from from corral.model.states, and a
refusal comes back as rows (stale reports; the worker's status when nothing was claimed)
for store/exchange.py's callers to raise their own errors from, exactly as on SQLite.

A runner's runs are opened by the function from the ask's `run`; what `open_run` says of
a task that differs from it (a command's prompt, its working directory) is written by one
statement more, right after the call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from corral.foundation import errors
from corral.foundation.ids import RUN_PREFIX, new_id
from corral.model.backoff import GiveUp, Retry
from corral.model.claims import Claim
from corral.model.exchange import (
    COMPLETED_TO,
    REPORTED,
    ClaimAsk,
    Exchanged,
    Held,
    Report,
    RunStart,
)
from corral.model.states import ALLOWED_FROM, CLAIMING, ClaimStatus, WorkerStatus
from corral.store import rows
from corral.store.claim_refusals import at_capacity, cannot_claim
from corral.store.driver import Driver, Json, Row

if TYPE_CHECKING:
    from corral.model.tasks import Task

OpenRun = Callable[["Task", int, str], RunStart]
# What each step may start from, and the statuses a worker claims in, as the array literals
# the function takes: the same for every call, so written once (dumping lists costs psycopg
# more than the rest of the call's parameters).
_ALLOWED = {
    action: "{" + ",".join(sorted(ALLOWED_FROM[action])) + "}"
    for action in ("complete", "fail", "defer", "release", "wait", "unblock")
}
_CLAIMING = "{" + ",".join(sorted(CLAIMING)) + "}"
# Review or done (model/exchange.py), in the order the function indexes it.
_COMPLETED_TO = "{" + ",".join(COMPLETED_TO) + "}"


def exchange_on_server(
    driver: Driver,
    worker_id: str | None,
    *,
    reports: Sequence[Report],
    ask: ClaimAsk | None,
    open_run: OpenRun | None,
    return_tasks: bool,
) -> Exchanged:
    """The exchange as one call (module doc); what it did."""
    limit = 0 if ask is None else ask.limit
    run = None if ask is None else ask.run
    found = driver.call(
        "exchange_on_server",
        worker_id=worker_id,
        reports=Json([_report(r) for r in reports]),
        limit=limit,
        task_id=None if ask is None else ask.task_id,
        kinds=[] if ask is None else list(ask.kinds),
        queues=[] if ask is None else list(ask.queues),
        lease_s=None if ask is None else ask.lease_s,
        run=None if run is None else Json(run._asdict()),
        run_ids=[new_id(RUN_PREFIX) for _ in range(limit)] if run is not None else [],
        claiming=_CLAIMING,
        completed_to=_COMPLETED_TO,
        return_tasks=return_tasks,
        **_ALLOWED,
    )
    by_kind: dict[str, list[Row]] = {}
    for row in found:
        by_kind.setdefault(row["row_kind"], []).append(row)
    if "no_worker" in by_kind:
        raise errors.NotFound("worker", worker_id or "")
    found_held = by_kind.get("held", [])
    claims_only = ask is not None and ask.claims_only
    held = () if claims_only else _held(driver, found_held)
    if held and run is not None and open_run is not None:
        _describe_runs(driver, held, run, open_run)
    refused, full = _refusal(by_kind.get("worker", []), worker_id)
    stale = by_kind.get("stale", [])
    stale_tasks = {row["report_task"] for row in stale}
    return Exchanged(
        stale=tuple(r for r in reports if r.task_id in stale_tasks),
        settled={row["run_id"]: row["outcome"] for row in stale if row["run_id"] is not None},
        held=held,
        claims=_claims(driver, found_held, ask) if claims_only else (),
        refused=refused,
        full=full,
        tasks=tuple(rows.task(driver, row) for row in by_kind.get("applied", [])),
    )


def _report(r: Report) -> dict[str, Any]:
    """A report as the function reads it (functions.sql, corral_exchange)."""
    out: dict[str, Any] = {
        "task_id": r.task_id,
        "token": r.token,
        "holder": r.holder,
        "action": str(r.action),
        "actor": r.actor,
        "run_id": r.run_id,
        "outcome": None if r.outcome is None else str(r.outcome),
        "exit_code": r.exit_code,
        "error": r.error,
        "usage": r.usage,
        "final_commit": r.final_commit,
        "result": r.result,
        "delay_s": r.delay_s,
        "run_at": None if r.run_at is None else r.run_at.isoformat(),
        "reason": r.reason,
    }
    if r.run_id is None:  # from outside a run: what its claim's open run notes
        out["reported"] = REPORTED.get(r.action)
    if isinstance(r.retry, Retry):
        out["retry_delay_s"] = r.retry.delay_s
    elif isinstance(r.retry, GiveUp):
        out["give_up"] = r.retry.reason
    return out


def _held(driver: Driver, found: list[Row]) -> tuple[Held, ...]:
    """The tasks claimed, in claim order, each with its new claim and run."""
    found.sort(key=lambda row: (-row["priority"], row["seq"]))
    return tuple(
        Held(
            task=rows.task(driver, row),
            token=row["token"],
            run_id=row["run_id"],
            lease_expires_at=driver.instant(row["lease_expires_at"]),
            claimed_at=driver.instant(row["claimed_at"]),
            deadline_at=None if row["deadline_at"] is None else driver.instant(row["deadline_at"]),
        )
        for row in found
    )


def _claims(driver: Driver, found: list[Row], ask: ClaimAsk | None) -> tuple[Claim, ...]:
    """The claims made, in claim order, from the function's held rows."""
    assert ask is not None and ask.lease_s is not None  # the use cases fill in the lease
    found.sort(key=lambda row: row["token"])
    return tuple(
        Claim(
            token=row["token"],
            task_id=row["id"],
            worker_id=row["worker_id"],
            status=ClaimStatus.ACTIVE,
            lease_s=ask.lease_s,
            claimed_at=driver.instant(row["claimed_at"]),
            lease_expires_at=driver.instant(row["lease_expires_at"]),
            deadline_at=None if row["deadline_at"] is None else driver.instant(row["deadline_at"]),
            renewals=0,
        )
        for row in found
    )


def _describe_runs(
    driver: Driver, held: tuple[Held, ...], default: RunStart, open_run: OpenRun
) -> None:
    """Record what `open_run` says of each new run where it differs from `default`."""
    changed = []
    for h in held:
        assert h.run_id is not None  # the ask opened runs
        start = open_run(h.task, h.token, h.run_id)
        if start != default:
            changed.append({"run_id": h.run_id, **start._asdict()})
    if changed:
        driver.call("describe_runs", runs=Json(changed))


def _refusal(found: list[Row], worker_id: str | None) -> tuple[str | None, str | None]:
    """(why the worker may not claim, why it has no room), from the function's worker row
    (there is one when a claim was asked for and nothing was claimed)."""
    if not found:
        return None, None
    row = found[0]
    assert worker_id is not None
    status = WorkerStatus(row["worker_status"])
    refusal = cannot_claim(worker_id, status, row["active"], None)
    if refusal is not None:
        return refusal.message, None
    if row["active"] >= row["max_concurrent"]:
        return None, at_capacity(worker_id, row["active"], row["max_concurrent"]).message
    return None, None
