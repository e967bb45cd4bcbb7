"""Queue commands: `queue list` (depth, load, limits, what is held back) and `queue set`."""

from __future__ import annotations

import re

from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.cli.render import queue_table
from corral.foundation.errors import InvalidInput
from corral.usecases.queues import queue_stats, set_queue_limits

LIMIT_FLAGS = {"max_ready": "--max-ready", "max_running": "--max-running", "rate": "--rate"}


def _limit(name: str, raw: str) -> float | None:
    """A limit from the command line: a number in ASCII digits, or `none` to remove it."""
    if raw == "none":
        return None
    if len(raw) > 40 or not re.fullmatch(r"[0-9]+(\.[0-9]+)?", raw):
        raise InvalidInput(name, "a finite number greater than 0 in ASCII digits, or none", raw)
    return float(raw)


def cmd_queue_set(ctx: Context) -> int:
    """Change a queue's limits in the store; every process enforces them from the next claim.
    Its day caps (`--max-cost-per-day`, `--max-tokens-per-day`), every run from its start."""
    a = ctx.args
    changes = {
        name: _limit(name, raw) for name in LIMIT_FLAGS if (raw := getattr(a, name)) is not None
    }
    day = a.max_cost_per_day is not None or a.max_tokens_per_day is not None
    shown: dict[str, float | None] = {}
    if changes or not day:
        limits = set_queue_limits(ctx.store, a.queue, changes)
        shown = {name: getattr(limits, name) for name in LIMIT_FLAGS}
    if day:
        from corral.usecases.usage import set_day_cap

        cap = set_day_cap(
            ctx.store,
            "queue",
            a.queue,
            max_cost=a.max_cost_per_day,
            max_tokens=a.max_tokens_per_day,
        ).to_dict()
        shown |= {key: cap[key] for key in ("max_cost_per_day", "max_tokens_per_day")}
    human = ", ".join(f"{n} {v:g}" for n, v in shown.items() if v is not None) or "no limits"
    ctx.emit({"queue": a.queue, **shown}, f"queue {a.queue}: {human}")
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
        Arg(
            "--max-cost-per-day",
            metavar="DOLLARS|none",
            help="its runs' spend a day ([budgets] day_zone)",
        ),
        Arg(
            "--max-tokens-per-day",
            metavar="N|none",
            help="its runs' tokens a day ([budgets] day_zone)",
        ),
    ),
)
