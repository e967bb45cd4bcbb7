"""Day caps: what a queue's tasks or a provider account's agents may spend in a day.

A cap is a row of `day_caps` in the handle's namespace (model/budgets.py says what it
means); setting one is an operator's, reading them a worker's too, since a run checks
them as its agent streams (runtime/worker/agent_runs.py).
"""

from __future__ import annotations

from typing import Any, Literal

from corral.foundation import errors
from corral.model.budgets import DAY_SCOPES, DayCap, check_cost, check_tokens
from corral.store import journal
from corral.store.operations import OPERATOR, VIEWER, Repository, served

KEEP = "keep"


class DayCaps(Repository):
    """Per-queue and per-provider caps a day."""

    NAME = "day_caps"

    @served(OPERATOR)
    def set_day_cap(
        self,
        scope: str,
        name: str,
        *,
        max_cost_usd: float | Literal["keep"] | None = "keep",
        max_tokens: int | Literal["keep"] | None = "keep",
        actor: str,
    ) -> DayCap:
        """Set (None: remove) the day caps of queue or provider `name`; a cap not given is
        kept. The caps afterwards."""
        if scope not in DAY_SCOPES:
            raise errors.InvalidInput("scope", f"one of {', '.join(DAY_SCOPES)}", scope)
        if max_cost_usd not in (KEEP, None):
            max_cost_usd = check_cost("max_cost_per_day", max_cost_usd)
        if max_tokens not in (KEEP, None):
            max_tokens = check_tokens("max_tokens_per_day", max_tokens)
        with self._driver.write() as tx:
            row = tx.one(
                "set_day_cap",
                scope=scope,
                name=name,
                max_cost_usd=None if max_cost_usd == KEEP else max_cost_usd,
                max_tokens=None if max_tokens == KEEP else max_tokens,
                keep_max_cost_usd=max_cost_usd == KEEP,
                keep_max_tokens=max_tokens == KEEP,
            )
            assert row is not None  # an upsert returns its row
            tx.run("drop_empty_day_cap", scope=scope, name=name)
            cap = _cap(row)
            journal.record(tx, "budget.day_cap", actor=actor, data=cap.to_dict())
        return cap

    @served(VIEWER)
    def day_caps(self, scope: str | None = None) -> list[DayCap]:
        """Every day cap of the namespace (of `scope`), by scope and name."""
        with self._driver.read() as tx:
            return [_cap(row) for row in tx.all("day_caps", scope=scope)]


def _cap(row: Any) -> DayCap:
    cost, tokens = row["max_cost_usd"], row["max_tokens"]
    return DayCap(
        scope=row["scope"],
        name=row["name"],
        max_cost_usd=None if cost is None else float(cost),
        max_tokens=None if tokens is None else int(tokens),
    )
