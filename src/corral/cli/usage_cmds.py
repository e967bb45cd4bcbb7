"""Spending commands: `usage` (tokens and cost summed) and `provider list|set` (the
accounts agents spend: caps, pauses, usage-limit parks)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal

from corral.cli import parsing
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.cli.render import table
from corral.foundation.durations import iso
from corral.foundation.errors import InvalidInput
from corral.foundation.printable import one_line
from corral.model.providers import ProviderState
from corral.model.usage import GROUPINGS, UsageTotal, total_of

if TYPE_CHECKING:
    from corral.model.budgets import CapSpending, TaskSpending
from corral.usecases.usage import (
    cap_spending,
    provider_states,
    set_day_cap,
    set_provider,
    task_cap_spending,
    usage_totals,
)

TITLE_CHARS = 50


def cmd_usage(ctx: Context) -> int:
    """Tokens, cost and wall time of the runs since --since, by task, queue, kind, agent,
    provider or day, or in total."""
    if ctx.args.caps:
        spending = cap_spending(ctx.store, zone=ctx.settings.day_zone)
        tasks = task_cap_spending(ctx.store)
        ctx.emit_all([*spending, *tasks], lambda: caps_text(spending, tasks))
        return 0
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


def _against(spent: str, cap: float | None, form: str) -> str:
    """`spent of cap` (dollars with `.2f`), or `-` where there is no such cap."""
    return "-" if cap is None else f"{spent} of {'$' if form == '.2f' else ''}{cap:{form}}"


def _dollars(cost_usd: float | None) -> str:
    return "-" if cost_usd is None else f"${cost_usd:.2f}"


def caps_table(spending: Sequence[CapSpending]) -> str:
    """One line a day cap: today's spend beside it; `-` where it has no such cap."""
    rows = [
        (
            s.cap.scope,
            s.cap.name,
            _against(_dollars(s.cost_usd), s.cap.max_cost_usd, ".2f"),
            _against(str(s.tokens), s.cap.max_tokens, "d"),
        )
        for s in spending
    ]
    return table(("SCOPE", "NAME", "COST_TODAY", "TOKENS_TODAY"), rows)


def caps_text(spending: Sequence[CapSpending], tasks: Sequence[TaskSpending]) -> str:
    """The day caps' table, then the tasks' budgets' (each said when there is none)."""
    days = caps_table(spending) if spending else "no day caps"
    return days + "\n\n" + (task_caps_table(tasks) if tasks else "no task budgets")


def task_caps_table(tasks: Sequence[TaskSpending]) -> str:
    """One line a task with a budget: all its runs' spend beside it; `-` where it has no
    such cap."""
    rows = [
        (
            t.task_id,
            t.status,
            _against(_dollars(t.cost_usd), t.budget.max_cost_usd, ".2f"),
            _against(str(t.tokens), t.budget.max_tokens, "d"),
            one_line(t.title, TITLE_CHARS),
        )
        for t in tasks
    ]
    return table(("TASK", "STATUS", "COST", "TOKENS", "TITLE"), rows)


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
    day = a.max_cost_per_day is not None or a.max_tokens_per_day is not None
    if day:
        cap = set_day_cap(
            ctx.store,
            "provider",
            a.name,
            max_cost=a.max_cost_per_day,
            max_tokens=a.max_tokens_per_day,
        )
        if a.max_running is None and not a.pause and not a.resume:
            ctx.emit(cap.to_dict(), f"provider {a.name}: {_day_text(cap.to_dict())}")
            return 0
    state = set_provider(
        ctx.store,
        a.name,
        max_running=_max_running(a.max_running),
        paused=True if a.pause else False if a.resume else None,
        unpark=a.resume,
    )
    ctx.emit(state.to_dict(), f"provider {state.name}: {state.held or 'claims go ahead'}")
    return 0


def _day_text(cap: dict[str, float | None]) -> str:
    """A provider's day caps, for people."""
    shown = [f"{key} {value:g}" for key, value in cap.items() if isinstance(value, float | int)]
    return ", ".join(shown) or "no day caps"


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
        Arg(
            "--caps",
            action="store_true",
            help="each day cap beside today's spend, each task's budget beside its spend",
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
        Arg(
            "--max-cost-per-day",
            metavar="DOLLARS|none",
            help="its agents' spend a day ([budgets] day_zone)",
        ),
        Arg(
            "--max-tokens-per-day",
            metavar="N|none",
            help="its agents' tokens a day ([budgets] day_zone)",
        ),
    ),
)
