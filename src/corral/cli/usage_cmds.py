"""Spending commands: `usage` (tokens and cost summed) and `provider list|set` (the
accounts agents spend: caps, pauses, usage-limit parks)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from corral.cli import parsing
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.cli.render import table
from corral.durations import iso
from corral.errors import InvalidInput
from corral.model.providers import ProviderState
from corral.model.usage import GROUPINGS, UsageTotal, total_of
from corral.printable import one_line
from corral.usage import provider_states, set_provider, usage_totals

TITLE_CHARS = 50


def cmd_usage(ctx: Context) -> int:
    """Tokens, cost and wall time of the runs since --since, by task, queue, kind, agent,
    provider or day, or in total."""
    since_s = parsing.duration("since", ctx.args.since)
    totals = usage_totals(ctx.store, by=ctx.args.by, since_s=since_s)
    ctx.emit_all(totals, lambda: usage_table(totals, ctx.args.by) if totals else "no runs")
    return 0


def usage_table(totals: Sequence[UsageTotal], by: str) -> str:
    """One line a group (by task: its title last), then the total (by total, the one
    line is it); `-` where no run of it reported that figure."""

    def number(value: float | None, form: str = "d") -> str:
        return "-" if value is None else format(value, form)

    rows = [
        (
            t.key,
            t.runs,
            t.with_usage,
            number(t.input_tokens),
            number(t.output_tokens),
            number(t.cache_read_tokens),
            number(t.cache_write_tokens),
            "-" if t.cost_usd is None else f"${t.cost_usd:.4f}",
            number(t.wall_s, ".0f"),
            *((one_line(t.title or "-", TITLE_CHARS),) if by == "task" else ()),
        )
        for t in (*totals, *(() if by == "total" else (total_of(list(totals)),)))
    ]
    headers = (by.upper(), "RUNS", "WITH_USAGE", "INPUT", "OUTPUT", "CACHE_READ", "CACHE_WRITE")
    title = ("TITLE",) if by == "task" else ()
    return table((*headers, "COST", "WALL_S", *title), rows)


def cmd_provider_list(ctx: Context) -> int:
    """Each provider account: cap, running agents, paused, parked until, why held back."""
    states = provider_states(ctx.store)
    ctx.emit_all(states, lambda: provider_table(states) if states else "no provider accounts")
    return 0


def provider_table(states: Sequence[ProviderState]) -> str:
    """One line an account."""
    rows = [
        (
            s.name,
            s.workers,
            s.running,
            "-" if s.max_running is None else s.max_running,
            iso(s.parked_until) if s.parked and s.parked_until else "-",
            s.held or "",
        )
        for s in states
    ]
    return table(("PROVIDER", "WORKERS", "RUNNING", "MAX_RUNNING", "PARKED_UNTIL", "HELD"), rows)


def cmd_provider_set(ctx: Context) -> int:
    """Cap, pause or resume a provider account in the store, for every host."""
    a = ctx.args
    if a.pause and a.resume:
        raise InvalidInput("pause", "either --pause or --resume, not both")
    state = set_provider(
        ctx.store,
        a.name,
        max_running=_max_running(a.max_running),
        paused=True if a.pause else False if a.resume else None,
        unpark=a.resume,
    )
    ctx.emit(state.to_dict(), f"provider {state.name}: {state.held or 'claims go ahead'}")
    return 0


def _max_running(raw: str | None) -> int | Literal["keep"] | None:
    """--max-running N, `none` to remove the cap, or "keep" when not given."""
    if raw is None:
        return "keep"
    if raw.lower() == "none":
        return None
    if not re.fullmatch(r"-?[0-9]+", raw):  # int() takes ' 5', '+5', '1_000', other digits
        raise InvalidInput("max_running", "a whole number of 0 or more, or none", raw)
    return parsing.whole("max_running", raw, minimum=0)


COMMANDS = (
    Command(
        "usage",
        cmd_usage,
        "tokens, cost and wall time of agents' runs, summed",
        Arg("--since", metavar="DURATION", help="runs started this long ago or later (7d, 12h)"),
        Arg(
            "--by",
            choices=GROUPINGS,
            default="task",
            help="how to group (default task; total: one row)",
        ),
    ),
    Command("provider list", cmd_provider_list, "provider accounts: caps, parks, running agents"),
    Command(
        "provider set",
        cmd_provider_set,
        "cap, pause or resume a provider account (every host)",
        Arg("name", metavar="NAME"),
        Arg("--max-running", metavar="N|none", help="agents of the account running at once"),
        Arg("--pause", action="store_true", help="claim nothing for it until --resume"),
        Arg("--resume", action="store_true", help="claim again, and end a usage-limit park"),
    ),
)
