"""Claim commands: claim, claim:next, claim:renew, claim:release, defer, done, fail.

`--token` defaults to `CORRAL_CLAIM_TOKEN`; with neither, the command acts as an operator
on whatever claim is active (docs/cli.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.cli import parsing
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.foundation.durations import iso, parse_delay_or_instant
from corral.model.states import FINISHED_WELL
from corral.usecases import claims

if TYPE_CHECKING:
    from corral.model.claims import Claim


def _claim_line(claim: Claim) -> str:
    return (
        f"claimed {claim.task_id} for {claim.worker_id}: token {claim.token}, "
        f"lease until {iso(claim.lease_expires_at)}"
    )


def cmd_claim(ctx: Context) -> int:
    """Claim one task by id."""
    a = ctx.args
    lease_s = parsing.positive_duration("lease", a.lease)
    claim = claims.claim(ctx.store, a.id, a.worker, lease_s=lease_s, settings=ctx.settings)
    ctx.emit(claim.to_dict(), _claim_line(claim))
    return 0


def cmd_claim_next(ctx: Context) -> int:
    """Claim the best ready task the worker may run; prints `null` (JSON) when there is none."""
    a = ctx.args
    claim = claims.claim_next(
        ctx.store,
        a.worker,
        kinds=tuple(a.kind or ()),
        queues=tuple(a.queue or ()),
        lease_s=parsing.positive_duration("lease", a.lease),
        settings=ctx.settings,
    )
    if claim is None:
        ctx.emit(None, "no task to claim")
        return 0
    ctx.emit(claim.to_dict(), _claim_line(claim))
    return 0


def cmd_renew(ctx: Context) -> int:
    """Extend a lease."""
    a = ctx.args
    claim = claims.renew(
        ctx.store,
        a.id,
        worker_id=a.worker,
        token=ctx.token(),
        lease_s=parsing.positive_duration("lease", a.lease),
        settings=ctx.settings,
    )
    ctx.emit(claim.to_dict(), f"renewed {claim.task_id}: lease until {iso(claim.lease_expires_at)}")
    return 0


def cmd_release(ctx: Context) -> int:
    """Give a task back to the queue: the attempt counts (the retry policy decides), unless
    `--no-attempt` (a worker on its way out)."""
    a = ctx.args
    task = claims.release(
        ctx.store,
        a.id,
        worker_id=a.worker,
        token=ctx.token(),
        reason=a.reason,
        attempt=not a.no_attempt,
        settings=ctx.settings,
    )
    if task.status in FINISHED_WELL:
        ctx.emit(task.to_dict(), f"{task.id} is {task.status} already: nothing to release")
        return 0
    counted = not a.no_attempt and task.status == "ready"
    after = f", retry after {iso(task.run_after)}" if counted else ""
    ctx.emit(task.to_dict(), f"released {task.id}: {task.status}{after}")
    return 0


def cmd_defer(ctx: Context) -> int:
    """Step aside: back to ready until a delay or an instant, the attempt not counted."""
    a = ctx.args
    until = parse_delay_or_instant("until", a.until)
    task = claims.defer(ctx.store, a.id, until=until, token=ctx.token(), reason=a.reason)
    ctx.emit(task.to_dict(), f"{task.id} deferred until {iso(task.run_after)}")
    return 0


def cmd_done(ctx: Context) -> int:
    """Report success."""
    a = ctx.args
    result = parsing.json_value("result", a.result)
    task = claims.complete(ctx.store, a.id, token=ctx.token(), result=result)
    ctx.emit(task.to_dict(), f"{task.id} {task.status}")
    return 0


def cmd_fail(ctx: Context) -> int:
    """Report failure; the retry policy decides what happens next."""
    a = ctx.args
    task = claims.fail(ctx.store, a.id, error=a.error, token=ctx.token(), settings=ctx.settings)
    after = f", retry after {iso(task.run_after)}" if task.status == "ready" else ""
    ctx.emit(task.to_dict(), f"{task.id} {task.status}{after}")
    return 0


LEASE = Arg("--lease", metavar="DURATION", help="lease length (default lease_s)")
TOKEN = Arg("--token", help="fencing token (default $CORRAL_CLAIM_TOKEN)")
ID, WORKER = Arg("id"), Arg("worker")

COMMANDS = (
    Command("claim", cmd_claim, "claim a task for a worker (prints the lease)", ID, WORKER, LEASE),
    Command(
        "claim:next",
        cmd_claim_next,
        "pick and claim the next task, atomically",
        WORKER,
        Arg("--kind", action="append", help="only this kind (within the worker's), repeatable"),
        Arg("--queue", action="append", help="only this queue (within the worker's), repeatable"),
        Arg("--lease", metavar="DURATION"),
    ),
    Command(
        "claim:renew",
        cmd_renew,
        "extend a lease",
        ID,
        WORKER,
        TOKEN,
        Arg("--lease", metavar="DURATION"),
    ),
    Command(
        "claim:release",
        cmd_release,
        "give a task back to the queue (the attempt counts unless --no-attempt)",
        ID,
        WORKER,
        TOKEN,
        Arg("--reason"),
        Arg(
            "--no-attempt",
            action="store_true",
            help="the task was not run (a worker on its way out): ready at once, not counted",
        ),
    ),
    Command(
        "defer",
        cmd_defer,
        "give a task back until later, the attempt not counted",
        ID,
        Arg("--until", required=True, metavar="DURATION|ISO", help="delay (2h) or time (ISO 8601)"),
        Arg("--reason", help="why (recorded in the event)"),
        TOKEN,
    ),
    Command("done", cmd_done, "report success", ID, Arg("--result", metavar="JSON"), TOKEN),
    Command("fail", cmd_fail, "report failure", ID, Arg("--error", required=True), TOKEN),
)
