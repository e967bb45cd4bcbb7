"""Budgets: the caps on what agents may spend, and the pure decisions about them.

A task's budget is two caps, either or both: dollars (`max_cost_usd`) and tokens
(`max_tokens`), summed over all of the task's runs. It is kept in the task's payload under
`budget` (`corral add --max-cost 2.50 --max-tokens 2M`), where its worker reads it with
the task, as it reads `workdir` and `resume`; `corral answer --budget +X` raises it in the
same transaction that answers the wait.

Tokens counted against a cap are what the agent was billed to read and write: input,
output and cache writes; cache reads are left out (a long session rereads its context
every turn, at a tenth of the price, and providers' own rate limits leave them out too).

Mid-run, a run's cost is its streamed token counts priced by its profile's price table
(dollars per million tokens of each usage key, model/agents.py `prices`); the agent's own
final cost (claude's `total_cost_usd`) replaces the estimate when it arrives.

Day caps (`corral queue set Q --max-cost-per-day 40`, `corral provider set P
--max-cost-per-day 100`) cap what every run of a queue's tasks, or of a provider account's
agents, spends in a day (UTC, or `[budgets] day_zone`'s: its midnight starts the day),
counted from the runs started that day. Reaching one needs
nobody: the run is stopped and its task deferred to the next day (worktree and session
kept, no attempt counted), when the cap lifts itself.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from typing import Any

from corral.foundation.errors import InvalidInput
from corral.foundation.records import record

PAYLOAD_KEY = "budget"
COST_KEY = "max_cost_usd"
TOKENS_KEY = "max_tokens"
BILLED_TOKENS = ("input_tokens", "output_tokens", "cache_write_tokens")
PER_TOKENS = 1_000_000  # a price table's unit: dollars per million tokens
MAX_COST_USD = 1e9
MAX_TOKENS = 10**15
_TOKEN_SCALE = {"": 1, "k": 1000, "m": 1_000_000, "g": 1_000_000_000}
_TOKEN_FIGURE = re.compile(r"(\d+(?:\.\d+)?)([kmg]?)", re.IGNORECASE)
_RAISE = re.compile(r"\+\$?(\d+(?:\.\d+)?)([kmg]?)(?:\s*tokens?)?", re.IGNORECASE)


@record(frozen=True, slots=True, kw_only=True)
class Budget:
    """A task's caps; None: no cap of that kind."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None

    @property
    def capped(self) -> bool:
        """Whether it caps anything."""
        return self.max_cost_usd is not None or self.max_tokens is not None

    def to_dict(self) -> dict[str, Any]:
        """Its payload shape: only the caps it has."""
        caps = {COST_KEY: self.max_cost_usd, TOKENS_KEY: self.max_tokens}
        return {key: value for key, value in caps.items() if value is not None}


@record(frozen=True, slots=True, kw_only=True)
class Spent:
    """What a task has spent: dollars (estimated while a run goes) and billed tokens."""

    cost_usd: float = 0.0
    tokens: int = 0

    def plus(self, other: Spent) -> Spent:
        return Spent(cost_usd=self.cost_usd + other.cost_usd, tokens=self.tokens + other.tokens)


@record(frozen=True, slots=True, kw_only=True)
class BudgetRaise:
    """`corral answer --budget +X`: dollars (`+1.50`) or tokens (`+500k`, `+2M tokens`)."""

    cost_usd: float | None = None
    tokens: int | None = None


def check_cost(field: str, value: Any) -> float:
    """A dollar cap: a finite number above zero."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(field, "a number of dollars above 0", value)
    if not (0 < value <= MAX_COST_USD) or not math.isfinite(value):
        raise InvalidInput(field, f"a number of dollars above 0, at most {MAX_COST_USD:g}", value)
    return float(value)


def check_tokens(field: str, value: Any) -> int:
    """A token cap: a whole number above zero."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_TOKENS:
        raise InvalidInput(field, f"a whole number of tokens from 1 to {MAX_TOKENS}", value)
    return value


def parse_cost(field: str, text: str) -> float:
    """`2.50` or `$2.50` as dollars."""
    try:
        value = float(text.strip().removeprefix("$"))
    except ValueError:
        raise InvalidInput(field, "a number of dollars, e.g. 2.50", text) from None
    return check_cost(field, value)


def parse_tokens(field: str, text: str) -> int:
    """`2000000`, `500k` or `2M` as tokens."""
    found = _TOKEN_FIGURE.fullmatch(text.strip())
    if found is None:
        raise InvalidInput(field, "a number of tokens, e.g. 500k or 2M", text)
    return check_tokens(field, round(float(found[1]) * _TOKEN_SCALE[found[2].lower()]))


def parse_raise(field: str, text: str) -> BudgetRaise:
    """`+1.50` (dollars) or `+500k`, `+2M`, `+300000 tokens` (tokens)."""
    found = _RAISE.fullmatch(text.strip())
    if found is None:
        raise InvalidInput(field, "+DOLLARS (e.g. +1.50) or +TOKENS (e.g. +500k tokens)", text)
    if found[2] or re.search(r"(?i)tokens?$", text.strip()):
        return BudgetRaise(tokens=parse_tokens(field, found[1] + found[2]))
    return BudgetRaise(cost_usd=check_cost(field, float(found[1])))


def budget_of(payload: dict[str, Any]) -> Budget:
    """The budget a task's payload holds (none: an uncapped Budget); InvalidInput names
    a malformed one (`add` checks it, so only a hand-written payload can be)."""
    given = payload.get(PAYLOAD_KEY)
    if given is None:
        return Budget()
    if not isinstance(given, dict) or set(given) - {COST_KEY, TOKENS_KEY}:
        raise InvalidInput(
            f"payload.{PAYLOAD_KEY}", f"an object of {COST_KEY} and {TOKENS_KEY}", given
        )
    cost, tokens = given.get(COST_KEY), given.get(TOKENS_KEY)
    return Budget(
        max_cost_usd=None if cost is None else check_cost(f"payload.budget.{COST_KEY}", cost),
        max_tokens=None if tokens is None else check_tokens(f"payload.budget.{TOKENS_KEY}", tokens),
    )


def with_budget(payload: dict[str, Any], budget: Budget) -> dict[str, Any]:
    """`payload` carrying `budget` (unchanged when it caps nothing)."""
    if not budget.capped:
        return payload
    return {**payload, PAYLOAD_KEY: budget.to_dict()}


def billed_tokens(usage: dict[str, Any] | None) -> int:
    """The tokens of `usage` counted against a cap (module docstring)."""
    if not usage:
        return 0
    return sum(int(usage.get(key) or 0) for key in BILLED_TOKENS)


def priced(usage: dict[str, Any] | None, prices: dict[str, float]) -> float | None:
    """`usage`'s cost: the agent's own when it gave one, else its tokens priced by
    `prices` (dollars per million of each key); None: neither is known."""
    if not usage:
        return None
    own = usage.get("cost_usd")
    if isinstance(own, int | float) and not isinstance(own, bool):
        return float(own)
    if not prices:
        return None
    return sum(float(usage.get(key) or 0) * price for key, price in prices.items()) / PER_TOKENS


def spent_of(usage: dict[str, Any] | None, prices: dict[str, float]) -> Spent:
    """What one run's `usage` spent."""
    return Spent(cost_usd=priced(usage, prices) or 0.0, tokens=billed_tokens(usage))


def crossed(budget: Budget, spent: Spent) -> str | None:
    """The wait reason's detail when `spent` reached a cap of `budget`, else None."""
    over = []
    if budget.max_cost_usd is not None and spent.cost_usd >= budget.max_cost_usd:
        over.append(f"${spent.cost_usd:.2f} of ${budget.max_cost_usd:.2f}")
    if budget.max_tokens is not None and spent.tokens >= budget.max_tokens:
        over.append(f"{spent.tokens} of {budget.max_tokens} tokens")
    if not over:
        return None
    return "task cap reached: " + ", ".join(over)


DAY_SCOPES = ("queue", "provider")


@record(frozen=True, slots=True, kw_only=True)
class DayCap:
    """What a queue's tasks, or a provider account's agents, may spend in a day."""

    scope: str  # one of DAY_SCOPES
    name: str
    max_cost_usd: float | None = None
    max_tokens: int | None = None

    @property
    def budget(self) -> Budget:
        return Budget(max_cost_usd=self.max_cost_usd, max_tokens=self.max_tokens)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md, `usage --caps`)."""
        return {
            "scope": self.scope,
            "name": self.name,
            "max_cost_per_day": self.max_cost_usd,
            "max_tokens_per_day": self.max_tokens,
        }


def day_start(now: datetime, zone: tzinfo = UTC) -> datetime:
    """The start of `now`'s day in `zone` (its midnight), as a UTC instant: what a day
    cap's spending is counted from."""
    return _midnight(now.astimezone(zone).date(), zone)


def next_day(now: datetime, zone: tzinfo = UTC) -> datetime:
    """When a day cap reached at `now` lifts itself: the next day's start in `zone`, as a
    UTC instant (23 or 25 hours after the day's start across a daylight-saving change)."""
    return _midnight(now.astimezone(zone).date() + timedelta(days=1), zone)


def _midnight(day: date, zone: tzinfo) -> datetime:
    """The first instant of `day` in `zone`, UTC. Where clocks skip midnight (a change at
    00:00), the wall time 00:00 read with the offset before the change is that instant."""
    return datetime.combine(day, time(0), tzinfo=zone).astimezone(UTC)


def day_crossed(cap: DayCap, spent: Spent) -> str | None:
    """The defer reason's detail when today's `spent` reached `cap`, else None."""
    detail = crossed(cap.budget, spent)
    if detail is None:
        return None
    return detail.replace("task cap", f"{cap.scope} {cap.name} day cap", 1)


@record(frozen=True, slots=True, kw_only=True)
class CapSpending:
    """A day cap beside what its runs spent today (`corral usage --caps`)."""

    cap: DayCap
    since: datetime  # the day's start
    cost_usd: float | None  # as the runs recorded it; None: none reported a cost
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md, `usage --caps`)."""
        return {
            **self.cap.to_dict(),
            "since": self.since.isoformat(),
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
        }


@record(frozen=True, slots=True, kw_only=True)
class TaskSpending:
    """A task's budget beside what all its runs spent (`corral usage --caps`)."""

    task_id: str
    title: str
    status: str
    budget: Budget
    cost_usd: float | None  # as the runs recorded it; None: none reported a cost
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md, `usage --caps`): scope `task`."""
        return {
            "scope": "task",
            "name": self.task_id,
            "title": self.title,
            "status": self.status,
            "max_cost_usd": self.budget.max_cost_usd,
            "max_tokens": self.budget.max_tokens,
            "cost_usd": self.cost_usd,
            "tokens": self.tokens,
        }
