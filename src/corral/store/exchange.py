"""Store side of batches (model/batches.py): reports and next claims in one transaction.

ClaimOps.exchange (store/claims.py) calls `exchange` here.

A batch of k tasks costs a fixed number of statements, whatever k: rows travel as one
JSON array per statement. The transaction, in order:

1. end the reported claims that are still active (`end_claims`, a compare-and-set on
   each token); a report whose claim ended elsewhere is stale and changes nothing;
2. apply the live reports: completions together, failures, deferrals and releases one
   by one (they are rare); finish their runs; refresh the worker's counters;
3. if asked, claim up to k ready tasks the worker may run, each with its own claim
   (token, lease) and its open run record;
4. write every event of the above in one statement.

`open_run(task, token, run_id)` describes each new run; it runs inside the transaction,
so it must be quick and must not raise.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from corral.durations import iso
from corral.errors import WorkerUnavailable
from corral.ids import RUN_PREFIX, new_id
from corral.model.batches import Action, ClaimAsk, Exchanged, Held, Report, RunStart
from corral.model.states import ALLOWED_FROM, ClaimStatus, TaskStatus
from corral.model.tasks import Task
from corral.store import journal, rows
from corral.store.capabilities import capability_filters, matches_nothing
from corral.store.claims import (
    apply_outcome,
    claiming_worker,
    record_outcome,
    unblock_dependents,
)
from corral.store.driver import Driver, Json, Row, Tx

OpenRun = Callable[[Task, int, str], RunStart]
_CLAIM_END = {
    Action.COMPLETE: ClaimStatus.COMPLETED,
    Action.FAIL: ClaimStatus.COMPLETED,
    Action.DEFER: ClaimStatus.RELEASED,
    Action.RELEASE: ClaimStatus.RELEASED,
}


def exchange(
    driver: Driver,
    worker_id: str,
    *,
    reports: Sequence[Report],
    ask: ClaimAsk | None,
    open_run: OpenRun | None,
) -> Exchanged:
    """Apply `reports` under their tokens, then claim what `ask` asks for (module doc)."""
    with driver.write() as tx:
        events: list[dict[str, Any]] = []
        live = _apply_reports(tx, driver, worker_id, reports, events)
        held: tuple[Held, ...] = ()
        refused = None
        if ask is not None:
            assert open_run is not None, "a claim opens runs: open_run describes them"
            try:
                held = _claim(
                    tx,
                    driver,
                    worker_id=worker_id,
                    ask=ask,
                    open_run=open_run,
                    events=events,
                )
            except WorkerUnavailable as exc:  # drained, dead ...: the reports still count
                refused = exc.message
        if live or held:  # one refresh of the worker's status and counters for both
            tx.run(
                "worker_after_claim",
                worker_id=worker_id,
                completed=sum(r.action is Action.COMPLETE for r in live),
                failed=sum(r.action is Action.FAIL for r in live),
            )
        journal.record_all(tx, events)
    applied = {r.held.token for r in live}
    stale = tuple(r for r in reports if r.held.token not in applied)
    return Exchanged(stale=stale, held=held, refused=refused)


def _apply_reports(
    tx: Tx, driver: Driver, worker_id: str, reports: Sequence[Report], events: list[dict[str, Any]]
) -> list[Report]:
    """Apply every report whose claim is still active; those (the others are stale)."""
    if not reports:
        return []
    ends = [{"token": r.held.token, "status": _CLAIM_END[r.action]} for r in reports]
    ended = {row["token"] for row in tx.all("end_claims", claims=Json(ends))}
    live = [r for r in reports if r.held.token in ended]
    if live:
        _complete(tx, [r for r in live if r.action is Action.COMPLETE], events)
        for report in live:
            if report.action is not Action.COMPLETE:
                _step_aside(tx, driver, report, events)
        _finish_runs(tx, worker_id, live, events)
    return live


def _actor(report: Report) -> str:
    return f"token:{report.held.token}"  # as `queue.complete` under a token names it


def _complete(tx: Tx, done: list[Report], events: list[dict[str, Any]]) -> None:
    if not done:
        return
    items = [{"id": r.held.task.id, "result": _json_text(r.result)} for r in done]
    found = tx.all("complete_tasks", tasks=Json(items), allowed=ALLOWED_FROM["complete"])
    status = {row["id"]: row["status"] for row in found}
    for r in done:
        if r.held.task.id in status:
            events.append(_task_event(r, "task.completed", status[r.held.task.id]))
    finished = [task_id for task_id, to in status.items() if to == TaskStatus.DONE]
    if finished:
        events.extend(unblock_dependents(tx, finished, _actor(done[0])))


def _step_aside(tx: Tx, driver: Driver, r: Report, events: list[dict[str, Any]]) -> None:
    """A failure, deferral or release: its task's change and event."""
    task_id = r.held.task.id
    if r.action is Action.FAIL:
        assert r.retry is not None, "the use case decides every failure's retry"
        error = r.error or "failed"
        apply_outcome(tx, task_id, r.retry, error=error, crash=False)
        record_outcome(
            tx,
            task_id,
            worker_id=r.held.task.worker_id or "",
            token=r.held.token,
            outcome=r.retry,
            error=error,
            actor=_actor(r),
        )
    elif r.action is Action.DEFER:
        row = tx.one(
            "defer_task",
            task_id=task_id,
            delay_s=r.defer_s,
            run_at=None,
            allowed=ALLOWED_FROM["defer"],
        )
        if row is not None:
            run_after = iso(driver.instant(row["run_after"]))
            events.append(
                _task_event(r, "task.deferred", TaskStatus.READY, reason="exit status 75")
                | {"data": {"run_after": run_after}}
            )
    elif tx.run("release_task", task_id=task_id, allowed=ALLOWED_FROM["release"]):
        events.append(
            _task_event(r, "task.released", TaskStatus.READY, reason="worker shutting down")
        )


def _finish_runs(tx: Tx, worker_id: str, live: list[Report], events: list[dict[str, Any]]) -> None:
    items = [
        {
            "id": r.held.run_id,
            "outcome": r.outcome,
            "exit_code": r.exit_code,
            "error": r.error,
            "usage": _json_text(r.usage),
            "final_commit": r.final_commit,
        }
        for r in live
    ]
    finished = {row["id"] for row in tx.all("finish_runs", runs=Json(items))}
    for r in live:
        if r.held.run_id in finished:
            events.append(
                journal.entry(
                    "run.finished",
                    actor=worker_id,
                    task_id=r.held.task.id,
                    worker_id=worker_id,
                    token=r.held.token,
                    reason=r.error,
                    data={"run_id": r.held.run_id, "outcome": r.outcome, "exit_code": r.exit_code},
                )
            )


def _task_event(r: Report, name: str, to: str, *, reason: str | None = None) -> dict[str, Any]:
    return journal.entry(
        name,
        actor=_actor(r),
        task_id=r.held.task.id,
        worker_id=r.held.task.worker_id,
        token=r.held.token,
        from_status=TaskStatus.RUNNING,
        to_status=to,
        reason=reason,
    )


def _json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def _claim(
    tx: Tx,
    driver: Driver,
    *,
    worker_id: str,
    ask: ClaimAsk,
    open_run: OpenRun,
    events: list[dict[str, Any]],
) -> tuple[Held, ...]:
    """Claim up to `ask.limit` ready tasks (never past the worker's max_concurrent)."""
    assert ask.lease_s is not None, "the use case fills in the default lease"
    worker = claiming_worker(tx, driver, worker_id, check_capacity=False)
    limit = min(ask.limit, worker.max_concurrent - worker.active)
    if limit > 1 and tx.one("any_queue_limits")["limited"]:  # type: ignore[index]
        limit = 1  # the claim reads the limits once: a batch could pass one
    params = capability_filters(worker, ask.kinds, ask.queues)
    if limit < 1 or matches_nothing(params):
        return ()
    found = tx.all("claim_next_tasks", limit=limit, **params)
    if not found:
        return ()
    ids = [row["id"] for row in found]
    claims = {
        row["task_id"]: row
        for row in tx.all("insert_claims", task_ids=ids, worker_id=worker_id, lease_s=ask.lease_s)
    }
    deps = {row["task_id"]: row["depends_on"] for row in tx.all("dependencies_of", task_ids=ids)}
    found.sort(key=lambda row: (-row["priority"], row["seq"]))  # claim order
    held = tuple(
        _hold(driver, row, claims[row["id"]], worker_id, deps.get(row["id"], "[]")) for row in found
    )
    runs = [_open(h, open_run, events) for h in held]
    tx.send_rows("insert_runs", runs, json_columns=("command",), worker_id=worker_id)
    return held


def _hold(driver: Driver, task_row: Row, claim_row: Row, worker_id: str, deps: str) -> Held:
    values = dict(zip(task_row.keys(), task_row, strict=True))
    values.update(
        token=claim_row["token"],
        worker_id=worker_id,
        lease_expires_at=claim_row["lease_expires_at"],
        depends_on=deps,
    )
    return Held(
        task=rows.task(driver, values),
        token=claim_row["token"],
        run_id=new_id(RUN_PREFIX),
        lease_expires_at=driver.instant(claim_row["lease_expires_at"]),
    )


def _open(h: Held, open_run: OpenRun, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The run record of `h` as insert_runs takes it; its two events go to `events`."""
    task, worker_id = h.task, h.task.worker_id
    start = open_run(task, h.token, h.run_id)
    claimed = {"from_status": TaskStatus.READY, "to_status": TaskStatus.RUNNING}
    for name, more in (
        ("task.claimed", {**claimed, "data": {"lease_expires_at": iso(h.lease_expires_at)}}),
        ("run.started", {"data": {"run_id": h.run_id, "attempt": task.attempts}}),
    ):
        events.append(
            journal.entry(
                name,
                actor=worker_id or "",
                task_id=task.id,
                worker_id=worker_id,
                token=h.token,
                **more,
            )
        )
    return {
        "id": h.run_id,
        "task_id": task.id,
        "token": h.token,
        "attempt": task.attempts,
        "prompt": start.prompt,
        "command": list(start.command),
        "cwd": start.cwd,
        "base_commit": start.base_commit,
        "transcript_path": start.transcript_path,
        "stderr_path": start.stderr_path,
    }
