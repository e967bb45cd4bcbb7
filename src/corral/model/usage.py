"""Usage and cost: what agents' runs reported, summed by task, queue, kind, agent,
provider or day, or all together.

A run's `usage` is what its agent's own stream said (runtime/worker/agent_streams.py),
normalized to these keys; a key no run reported sums to None, never 0, so "no figures"
is never mistaken for "free". `runs` beside `with_usage` says how much of the total the
figures cover.
"""

from __future__ import annotations

from typing import Any

from corral.foundation.records import record

USAGE_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
# "total": every run in one group, so `usage --json` (an array, as every listing) can give
# the total too, counted by the database rather than summed from a listing it may cut.
GROUPINGS = ("task", "queue", "kind", "agent", "provider", "day", "total")


@record(frozen=True, slots=True, kw_only=True)
class UsageTotal:
    """The runs of one group and what they reported, summed."""

    key: str
    runs: int
    with_usage: int  # runs whose stream reported usage
    tasks: int
    input_tokens: int | None
    output_tokens: int | None
    cache_read_tokens: int | None
    cache_write_tokens: int | None
    cost_usd: float | None
    wall_s: float | None
    title: str | None = None  # the task's title, when grouped by task

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md, `usage` and `show`)."""
        return {
            "key": self.key,
            "runs": self.runs,
            "with_usage": self.with_usage,
            "tasks": self.tasks,
            **{name: getattr(self, name) for name in USAGE_KEYS},
            "cost_usd": self.cost_usd,
            "wall_s": self.wall_s,
            **({"title": self.title} if self.title is not None else {}),  # by task
        }


def _sum(values: list[Any]) -> Any:
    """The sum of the figures reported; None when none was."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def total_of(totals: list[UsageTotal]) -> UsageTotal:
    """Every group of `totals` summed into one (key "total"); a figure no group reported
    stays None."""
    return UsageTotal(
        key="total",
        runs=sum(t.runs for t in totals),
        with_usage=sum(t.with_usage for t in totals),
        tasks=sum(t.tasks for t in totals),
        input_tokens=_sum([t.input_tokens for t in totals]),
        output_tokens=_sum([t.output_tokens for t in totals]),
        cache_read_tokens=_sum([t.cache_read_tokens for t in totals]),
        cache_write_tokens=_sum([t.cache_write_tokens for t in totals]),
        cost_usd=_sum([t.cost_usd for t in totals]),
        wall_s=_sum([t.wall_s for t in totals]),
    )
