"""Provider accounts: what agents spend (`claude`, `claude:work`), and when claims stop.

A provider account is shared by every worker that names it, on every host. Claims for it
stop while it is parked (its usage limit was reached: until the reset), paused (by an
operator) or at its cap (`max_running` agents at once). The claim transaction checks this
under the account's row lock (store/exchange.py, corral_exchange in PostgreSQL), so no
two hosts can both pass a cap; this module only says, for people, why claims stop.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from corral.foundation.durations import iso
from corral.foundation.records import record

# Imported from here by their older callers; they live in model/names.py.
from corral.model.names import PROVIDER_PATTERN as PROVIDER_PATTERN  # noqa: PLC0414 - re-exported
from corral.model.names import check_provider as check_provider  # noqa: PLC0414 - re-exported


@record(frozen=True, slots=True, kw_only=True)
class ProviderState:
    """One provider account now: its settings, its park, and the agents it runs."""

    name: str
    max_running: int | None
    paused: bool
    parked_until: datetime | None
    parked_at: datetime | None
    park_reason: str | None
    running: int  # active claims of its workers, on every host
    workers: int  # its live workers
    now: datetime  # the store's clock when this was read

    @property
    def parked(self) -> bool:
        """Whether its usage limit holds claims back now."""
        return self.parked_until is not None and self.parked_until > self.now

    @property
    def held(self) -> str | None:
        """Why its workers claim nothing now, or None."""
        if self.paused:
            return "paused"
        if self.parked and self.parked_until is not None:
            reason = f": {self.park_reason}" if self.park_reason else ""
            return f"parked until {iso(self.parked_until)}{reason}"
        if self.max_running is not None and self.running >= self.max_running:
            return f"at max_running ({self.running} of {self.max_running} running)"
        return None

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md, `provider list`)."""
        return {
            "name": self.name,
            "max_running": self.max_running,
            "paused": self.paused,
            "parked": self.parked,
            "parked_until": iso(self.parked_until) if self.parked else None,
            "park_reason": self.park_reason if self.parked else None,
            "running": self.running,
            "workers": self.workers,
            "held": self.held,
        }


def park_until(
    reset_at: datetime | None, now: datetime, *, default_s: float, min_s: float
) -> tuple[datetime, bool]:
    """Until when a usage limit parks its provider, and whether the minimum decided it.

    The reset the agent gave, else `default_s` from now (`[agents] park_default`); never
    less than `min_s` from now (`[agents] park_min`): an agent that still refuses just
    past its `resetsAt` (clocks differ; a reset is approximate) parks the account again
    for a while, instead of a claim, a refusal and a defer over and over.
    """
    least = now + timedelta(seconds=min_s)
    until = reset_at if reset_at is not None else now + timedelta(seconds=default_s)
    return (until, False) if until >= least else (least, True)
