"""The exchange: every claim and every reported outcome, as one write transaction.

`ClaimOps.exchange` (store/claims.py) calls `exchange` here; `corral done`, `claim:next`, a
runner's batch and (later) the HTTP API all come this way, one report or claim or many.
On PostgreSQL the whole transaction is one call of a server-side function
(store/postgres/exchange.py); on SQLite, whose statements cost no round trip, it runs here,
statement by statement under one write lock. The steps, in order:

1. end the claims the reports name, each a compare-and-set on its token (or, without one,
   whatever claim is active) and holder: `end_claims`. A report whose claim had ended
   elsewhere is stale and changes nothing of its task;
2. apply the live reports: completions together, failures, deferrals, waits and releases
   one by one (they are rare); unblock the dependents of what is now done;
3. finish the runs the reports name: a live report's as it says, a stale one's as what was
   reported under its token meanwhile (`runs.reported`), else lease_lost. A report from
   outside a run (`corral done` by the agent) notes what it reported on the claim's open
   run instead, so the run records it when it finishes, whoever finishes it;
4. if asked, claim up to k tasks the worker may take (the claimable filter,
   store/claimable.py), each with its own claim, token and lease and, for a runner, its
   open run;
5. refresh each holder's idle/busy and counters once.

Events are copied by SQL from the rows the steps wrote, one statement for task.claimed
with run.started and one for task.completed with run.finished, so a batch of k tasks costs
a fixed number of statements whatever k; the rare ones (failures, deferrals, waits,
releases, unblocked dependents) are written from Python, each group right after its change, so the
log keeps their order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, NamedTuple

from corral.foundation import errors
from corral.foundation.documents import MAX_INT32
from corral.foundation.durations import iso
from corral.foundation.ids import RUN_PREFIX, new_ids
from corral.model.exchange import (
    COMPLETED_TO,
    REPORTED,
    Action,
    ClaimAsk,
    Exchanged,
    Held,
    Report,
    RunStart,
)
from corral.model.states import ALLOWED_FROM, TaskStatus, WorkerStatus
from corral.store import journal, rows
from corral.store.capabilities import capability_filters, matches_nothing
from corral.store.claim_refusals import at_capacity, cannot_claim
from corral.store.driver import Driver, Json, Row, Tx
from corral.store.lookups import read_task
from corral.store.task_endings import apply_outcome, outcome_event, unblock_dependents

if TYPE_CHECKING:
    from corral.model.tasks import Task

OpenRun = Callable[["Task", int, str], RunStart]
# Each holder's completions and failures in one exchange: [completed, failed] by worker id.
Tally = dict[str, list[int]]
_ONE_AT_A_TIME = (Action.FAIL, Action.DEFER, Action.WAIT, Action.RELEASE)
# The actions that give their claim back (released) rather than finish it (completed).
_RELEASING = (Action.DEFER, Action.WAIT, Action.RELEASE)
# Review or done, as complete_task(s) take it: the same text for every completion.
_COMPLETED_TO = json.dumps(COMPLETED_TO)


def exchange(
    driver: Driver,
    worker_id: str | None,
    *,
    reports: Sequence[Report] = (),
    ask: ClaimAsk | None = None,
    open_run: OpenRun | None = None,
    return_tasks: bool = False,
) -> Exchanged:
    """Apply `reports` under their claims, then claim what `ask` asks for (module doc)."""
    _check(worker_id, reports, ask)
    if driver.exchange_on_server:
        # The PostgreSQL package only for a PostgreSQL store: SQLite commands never load it.
        from corral.store.postgres.exchange import exchange_on_server  # noqa: PLC0415

        return exchange_on_server(
            driver,
            worker_id,
            reports=reports,
            ask=ask,
            open_run=open_run,
            return_tasks=return_tasks,
        )
    with driver.write() as tx:
        tally: Tally = {}
        live, settled, completed = _apply_reports(tx, driver, reports, tally)
        held: tuple[Held, ...] = ()
        made: list[Row] = []
        refused = full = None
        if ask is not None:
            assert worker_id is not None  # _check
            held, made, refused, full = _claim(tx, driver, worker_id, ask, open_run)
            if held or made:
                tally.setdefault(worker_id, [0, 0])
        _refresh_workers(tx, tally)
    stale = tuple(r for r in reports if r.task_id not in live)
    applied = [r.task_id for r in reports if r.task_id in live] if return_tasks else []
    return Exchanged(
        stale=stale,
        settled=settled,
        held=held,
        claims=tuple(rows.claim(driver, row) for row in made),
        refused=refused,
        full=full,
        tasks=tuple(
            rows.task(driver, completed[task_id])
            if task_id in completed
            else read_task(driver, task_id)
            for task_id in applied
        ),
    )


def _check(worker_id: str | None, reports: Sequence[Report], ask: ClaimAsk | None) -> None:
    """Refuse what no exchange can mean: a claim with no worker, a task reported twice, a
    deferral with no time, a wait with no reason."""
    if ask is not None and not worker_id:
        raise errors.InvalidInput("worker", "the worker that claims")
    seen: set[str] = set()
    for report in reports:
        if report.task_id in seen:
            raise errors.InvalidInput("reports", "one report per task", report.task_id)
        seen.add(report.task_id)
        if report.action is Action.DEFER and (report.delay_s is None) == (report.run_at is None):
            raise errors.InvalidInput("until", "a delay or an instant, exactly one of them")
        if report.action is Action.WAIT and not report.reason:
            raise errors.InvalidInput("reason", "why the task waits for a person")


# -- reports --------------------------------------------------------------------------------


def _apply_reports(
    tx: Tx, driver: Driver, reports: Sequence[Report], tally: Tally
) -> tuple[dict[str, tuple[int, str]], dict[str, str], dict[str, Row]]:
    """Steps 1 to 3 (module doc); (task id -> (token, holder) of each live report, the
    outcome of each stale report's run by run id, the rows of the tasks completed one by
    one, as they are now)."""
    if not reports:
        return {}, {}, {}
    claims = [
        {
            "task_id": r.task_id,
            "token": r.token,
            "holder": r.holder,
            "released": r.action in _RELEASING,
        }
        for r in reports
    ]
    # One report, by its task's id (the common case, a task at a time); many in one go.
    found = (
        tx.all("end_reported_claim", **claims[0])
        if len(claims) == 1
        else tx.all("end_claims", claims=claims)
    )
    ended = {row["task_id"]: (row["token"], row["worker_id"]) for row in found}
    live = [r for r in reports if r.task_id in ended]
    completed = [r for r in live if r.action is Action.COMPLETE]
    now_done, returned = _complete(tx, completed)
    events: list[dict[str, Any]] = []
    for report in live:
        if report.action in _ONE_AT_A_TIME:
            _step_aside(tx, driver, report, ended[report.task_id], events)
        done_failed = tally.setdefault(ended[report.task_id][1], [0, 0])
        done_failed[0] += report.action is Action.COMPLETE
        done_failed[1] += report.action is Action.FAIL
    journal.record_all(tx, events)
    finished = _finish_runs(tx, live, ended)
    stale = [r for r in reports if r.task_id not in ended]
    finished_stale, settled = _finish_stale_runs(tx, stale)
    _record_finished(tx, completed, ended, [*finished, *finished_stale])
    if now_done:
        journal.record_all(tx, unblock_dependents(tx, now_done, completed[0].actor))
    return ended, settled, returned


def _complete(tx: Tx, done: list[Report]) -> tuple[list[str], dict[str, Row]]:
    """Complete the tasks of `done`: (those now done that others may depend on, the rows of
    those completed one by one, each its task as it is now)."""
    now_done: list[str] = []
    returned: dict[str, Row] = {}
    # Many without a result in one statement; one alone, or one with a result, by its id
    # (whose statement also says whether anything depends on it: most tasks, nothing).
    plain = [r.task_id for r in done if r.result is None] if len(done) > 1 else []
    if plain:
        found = tx.all(
            "complete_tasks",
            ids=plain,
            completed_to=_COMPLETED_TO,
            allowed=ALLOWED_FROM["complete"],
        )
        now_done += [row["id"] for row in found if row["status"] == TaskStatus.DONE]
    for report in done:
        if report.task_id in plain:
            continue
        row = tx.one(
            "complete_task",
            task_id=report.task_id,
            result=Json(report.result),
            completed_to=_COMPLETED_TO,
            allowed=ALLOWED_FROM["complete"],
        )
        assert row is not None  # its claim was active, so it was running
        returned[report.task_id] = row
        if row["status"] == TaskStatus.DONE and row["has_dependents"]:
            now_done.append(report.task_id)
    return now_done, returned


def _record_finished(
    tx: Tx, completed: list[Report], ended: dict[str, tuple[int, str]], run_ids: list[str]
) -> None:
    """task.completed for the completions, run.finished for the runs: one statement per
    event actor, the runs with the first (one in all, but for a mixed batch). The actor is
    None where it is the claim's own token (a runner's reports), which the statement writes."""
    groups: dict[str | None, list[int]] = {}
    for r in completed:
        token = ended[r.task_id][0]
        groups.setdefault(None if r.actor == f"token:{token}" else r.actor, []).append(token)
    runs: list[str] | None = run_ids or None
    for actor, tokens in groups.items() or [(None, [])]:
        if tokens or runs:
            tx.send("record_finished", tokens=tokens, actor=actor, run_ids=runs)
        runs = None


def _step_aside(
    tx: Tx, driver: Driver, r: Report, claim: tuple[int, str], events: list[dict[str, Any]]
) -> None:
    """A failure, deferral, wait or release: its task's change and its event."""
    token, holder = claim
    if r.action is Action.FAIL:
        assert r.retry is not None, "the use case decides every failure's retry"
        error = r.error or "failed"
        apply_outcome(tx, r.task_id, r.retry, error=error, crash=False)
        events.append(outcome_event(r.task_id, holder, token, r.retry, error=error, actor=r.actor))
        return
    if r.action is Action.DEFER:
        row = tx.one(
            "defer_task",
            task_id=r.task_id,
            delay_s=r.delay_s,
            run_at=r.run_at,
            allowed=ALLOWED_FROM["defer"],
        )
        assert row is not None  # its claim was active, so it was running
        name, data = "task.deferred", {"run_after": iso(driver.instant(row["run_after"]))}
    elif r.action is Action.WAIT:
        tx.run("wait_task", task_id=r.task_id, reason=r.reason, allowed=ALLOWED_FROM["wait"])
        name, data = "task.waiting", None
    else:
        tx.run("release_task", task_id=r.task_id, allowed=ALLOWED_FROM["release"])
        name, data = "task.released", None
    to_status = TaskStatus.WAITING if r.action is Action.WAIT else TaskStatus.READY
    events.append(
        journal.entry(
            name,
            actor=r.actor,
            task_id=r.task_id,
            worker_id=holder,
            token=token,
            from_status=TaskStatus.RUNNING,
            to_status=to_status,
            reason=r.reason,
            data=data,
        )
    )


def _finish_runs(tx: Tx, live: list[Report], ended: dict[str, tuple[int, str]]) -> list[str]:
    """Finish the runs the live reports name; note what a report from outside a run said on
    its claim's open run. The ids of the runs finished."""
    plain: dict[tuple[str, int | None], list[str]] = {}
    detailed = []
    for r in live:
        if r.run_id is None:
            reported = REPORTED.get(r.action)
            if reported is not None:
                token, holder = ended[r.task_id]
                tx.send("note_reported", holder=holder, token=token, reported=reported)
            continue
        if r.error is None and r.usage is None and r.final_commit is None:
            plain.setdefault((str(r.outcome), r.exit_code), []).append(r.run_id)
        else:
            detailed.append(_run_end(r) | {"error": r.error, "final_commit": r.final_commit})
    finished = []
    for (outcome, exit_code), ids in plain.items():
        found = tx.all("finish_plain_runs", ids=ids, outcome=outcome, exit_code=exit_code)
        finished += [row["id"] for row in found]
    if detailed:
        finished += [row["id"] for row in tx.all("finish_runs", runs=Json(detailed))]
    return finished


def _finish_stale_runs(tx: Tx, stale: list[Report]) -> tuple[list[str], dict[str, str]]:
    """Finish the runs of stale reports as what was reported under their token: (the ids of
    the runs finished now; the outcome each run has, by run id: one finished before, by a
    reconciler, keeps its own and its run.finished)."""
    runs = [_run_end(r) for r in stale if r.run_id is not None]
    if not runs:
        return [], {}
    finished = [row["id"] for row in tx.all("finish_stale_runs", runs=Json(runs))]
    found = tx.all("run_outcomes", ids=[run["id"] for run in runs])
    return finished, {row["id"]: row["outcome"] for row in found}


def _run_end(r: Report) -> dict[str, Any]:
    """What finish_runs reads of a report's run, the usage as JSON text."""
    usage = None if r.usage is None else json.dumps(r.usage, separators=(",", ":"))
    return {"id": r.run_id, "outcome": r.outcome, "exit_code": r.exit_code, "usage": usage}


# -- claims ---------------------------------------------------------------------------------


def _claim(
    tx: Tx, driver: Driver, worker_id: str, ask: ClaimAsk, open_run: OpenRun | None
) -> tuple[tuple[Held, ...], list[Row], str | None, str | None]:
    """Step 4 (module doc): (the tasks held, or with `claims_only` the rows of the claims
    made, their records made after COMMIT; why the worker may not claim; why it has no room
    now)."""
    row = tx.one("claiming_worker", worker_id=worker_id)
    if row is None:
        raise errors.NotFound("worker", worker_id)
    worker = _Claimant.of(driver, row)
    refusal = cannot_claim(worker.id, worker.status, worker.active, None)
    if refusal is not None:
        return (), [], refusal.message, None
    room = worker.max_concurrent - worker.active
    if room < 1:
        return (), [], None, at_capacity(worker.id, worker.active, worker.max_concurrent).message
    limit = min(ask.limit, room)
    if worker.provider is not None:
        limit = min(limit, _provider_room(tx, worker.provider))
    if limit > 1 and tx.one("any_queue_limits", worker_id=worker_id)["limited"]:  # type: ignore[index]
        limit = 1  # the claim reads the limits once: a batch could pass one
    params = capability_filters(worker, ask.kinds, ask.queues)
    if limit < 1 or matches_nothing(params):
        return (), [], None, None
    if ask.task_id is not None:
        found = tx.all("claim_task", task_id=ask.task_id, **params)
    else:
        found = tx.all("claim_tasks", limit=limit, **params)
    if not found:
        return (), [], None, None
    if ask.claims_only:
        made = _insert_claims(tx, found, worker_id, ask)
        tx.send("record_claimed", first=made[0]["token"], actor=worker_id)
        return (), made, None, None
    return _hold(tx, driver, found, worker_id=worker_id, ask=ask, open_run=open_run), [], None, None


def _provider_room(tx: Tx, provider: str) -> int:
    """How many more agents provider account `provider` may run now (none while it is
    paused or parked); read inside the claim's transaction, which writers take in turns."""
    row = tx.one("provider_allowance", provider=provider)
    if row is None:
        return MAX_INT32
    if row["paused"] or row["parked"]:
        return 0
    if row["max_running"] is None:
        return MAX_INT32
    room: int = row["max_running"] - row["running"]
    return max(0, room)


class _Claimant(NamedTuple):
    """What a claim reads of its worker (a whole `Worker` record costs more than the claim's
    own Python, and none of the rest is needed)."""

    id: str
    name: str
    kinds: tuple[str, ...]
    queues: tuple[str, ...]
    status: WorkerStatus
    active: int
    max_concurrent: int
    provider: str | None

    @classmethod
    def of(cls, driver: Driver, row: Row) -> _Claimant:
        return cls(
            id=row["id"],
            name=row["name"],
            kinds=tuple(driver.json(row["kinds"])),
            queues=tuple(driver.json(row["queues"])),
            status=WorkerStatus(row["status"]),
            active=row["active"],
            max_concurrent=row["max_concurrent"],
            provider=row["provider"],
        )


def _insert_claims(tx: Tx, found: list[Row], worker_id: str, ask: ClaimAsk) -> list[Row]:
    """A claim on each task of `found`, in token order: one by its task's row (a task at a
    time, the common case), many in one statement."""
    if len(found) == 1:
        task = found[0]
        return tx.all(
            "insert_claim",
            task_id=task["id"],
            timeout_s=task["timeout_s"],
            worker_id=worker_id,
            lease_s=ask.lease_s,
        )
    made = tx.all(
        "insert_claims",
        task_ids=[row["id"] for row in found],
        worker_id=worker_id,
        lease_s=ask.lease_s,
    )
    made.sort(key=lambda row: row["token"])
    return made


def _hold(
    tx: Tx,
    driver: Driver,
    found: list[Row],
    *,
    worker_id: str,
    ask: ClaimAsk,
    open_run: OpenRun | None,
) -> tuple[Held, ...]:
    """Claims, events and runs for the tasks just claimed; them, held, in claim order."""
    assert ask.lease_s is not None, "the use case fills in the default lease"
    ids = [row["id"] for row in found]
    claims = {row["task_id"]: row for row in _insert_claims(tx, found, worker_id, ask)}
    deps = {row["task_id"]: row["depends_on"] for row in tx.all("dependencies_of", task_ids=ids)}
    found.sort(key=lambda row: (-row["priority"], row["seq"]))  # claim order
    decoding = _Decoding(driver)
    run_ids: Sequence[str | None] = (
        new_ids(RUN_PREFIX, len(found)) if ask.run is not None else [None] * len(found)
    )
    held = tuple(
        _held(
            decoding,
            row,
            claims[row["id"]],
            worker_id=worker_id,
            deps=deps.get(row["id"], "[]"),
            run_id=run_id,
        )
        for row, run_id in zip(found, run_ids, strict=True)
    )
    if ask.run is not None:
        _open_runs(tx, held, ask.run, open_run, worker_id)
    tx.send("record_claimed", first=min(h.token for h in held), actor=worker_id)
    return held


class _Decoding:
    """A driver's decoding for the records of one exchange, each instant decoded once: the
    claims of a batch share their claimed_at and most their lease expiry and deadline, and
    their tasks their updated_at, so a batch of k tasks decodes a few instants, not 8k."""

    __slots__ = ("_decoded", "_driver", "json")

    def __init__(self, driver: Driver) -> None:
        self._driver = driver
        self._decoded: dict[Any, datetime] = {}
        self.json = driver.json

    def instant(self, value: Any) -> datetime:
        """`value` decoded, as the driver decodes it."""
        decoded = self._decoded.get(value)
        if decoded is None:
            decoded = self._decoded[value] = self._driver.instant(value)
        return decoded


def _held(
    decoding: _Decoding,
    task_row: Row,
    claim_row: Row,
    *,
    worker_id: str,
    deps: str,
    run_id: str | None,
) -> Held:
    deadline = claim_row["deadline_at"]
    lease = claim_row["lease_expires_at"]
    return Held(
        task=rows.task(
            decoding, task_row, claim=(claim_row["token"], worker_id, lease), depends_on=deps
        ),
        token=claim_row["token"],
        run_id=run_id,
        lease_expires_at=decoding.instant(lease),
        claimed_at=decoding.instant(claim_row["claimed_at"]),
        deadline_at=None if deadline is None else decoding.instant(deadline),
    )


def _open_runs(
    tx: Tx, held: tuple[Held, ...], default: RunStart, open_run: OpenRun | None, worker_id: str
) -> None:
    """A run record for each held task, as `open_run` describes it (else `default`): in one
    statement when they are all alike, else one row each."""
    starts = [
        default if open_run is None else open_run(h.task, h.token, h.run_id or "") for h in held
    ]
    if all(start == default for start in starts):
        tx.send(
            "insert_alike_runs",
            runs=[[h.run_id, h.token] for h in held],
            **{**default._asdict(), "command": list(default.command)},
        )
    else:
        runs = [run_row(h, start) for h, start in zip(held, starts, strict=True)]
        tx.send_rows("insert_runs", runs, json_columns=("command",), worker_id=worker_id)


def run_row(h: Held, start: RunStart) -> dict[str, Any]:
    """The run record of `h` as insert_runs takes it."""
    return {
        "id": h.run_id,
        "task_id": h.task.id,
        "token": h.token,
        "attempt": h.task.attempts,
        "prompt": start.prompt,
        "command": list(start.command),
        "cwd": start.cwd,
        "base_commit": start.base_commit,
        "transcript_path": start.transcript_path,
        "stderr_path": start.stderr_path,
    }


def _refresh_workers(tx: Tx, tally: Tally) -> None:
    """Step 5: each holder's status and counters, once per exchange."""
    for holder in sorted(tally):
        completed, failed = tally[holder]
        tx.send("worker_after_claim", worker_id=holder, completed=completed, failed=failed)
