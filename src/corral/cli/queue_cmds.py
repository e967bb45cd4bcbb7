"""Queue commands: `queue list` (depth, load, limits, what is held back) and `queue set`."""

from __future__ import annotations

from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.cli.render import queue_table
from corral.errors import InvalidInput
from corral.queues import queue_stats, set_queue_limits

LIMIT_FLAGS = {"max_ready": "--max-ready", "max_running": "--max-running", "rate": "--rate"}


def _limit(name: str, raw: str) -> float | None:
    """A limit from the command line: a number, or `none` to remove it."""
    if raw.lower() == "none":
        return None
    try:
        return float(raw)
    except ValueError:
        raise InvalidInput(name, "a number greater than 0, or none", raw) from None


def cmd_queue_set(ctx: Context) -> int:
    """Change a queue's limits in the store; every process enforces them from the next claim."""
    changes = {
        name: _limit(name, raw)
        for name in LIMIT_FLAGS
        if (raw := getattr(ctx.args, name)) is not None
    }
    limits = set_queue_limits(ctx.store, ctx.args.queue, changes)
    shown = {name: getattr(limits, name) for name in LIMIT_FLAGS}
    human = ", ".join(f"{n} {v:g}" for n, v in shown.items() if v is not None) or "no limits"
    ctx.emit({"queue": ctx.args.queue, **shown}, f"queue {ctx.args.queue}: {human}")
    return 0


def cmd_queue_list(ctx: Context) -> int:
    """Each queue with unfinished tasks or limits: depth, running, limits, held back or full."""
    stats = queue_stats(ctx.store)
    ctx.emit_all(stats, lambda: queue_table(stats) if stats else "no queues")
    return 0


COMMANDS = (
    Command("queue list", cmd_queue_list, "depth, running, limits and what is held back"),
    Command(
        "queue set",
        cmd_queue_set,
        "change a queue's limits",
        Arg("queue", metavar="NAME"),
        Arg("--max-ready", metavar="N|none", help="tasks waiting at most; add refused beyond"),
        Arg("--max-running", metavar="N|none", help="tasks of the queue running at once"),
        Arg("--rate", metavar="N|none", help="claims started per minute at most"),
    ),
)
