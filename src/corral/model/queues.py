"""Per-queue backpressure (ARCHITECTURE.md 4.8): a queue's load beside its limits.

The store enforces the limits in its claim and enqueue statements; this module only says,
for people, which limit a queue is at.
"""

from __future__ import annotations

from typing import Any

from corral.foundation.policies import QueueLimits
from corral.foundation.records import record

#: The window of the rate limit: `rate` is claims started per minute.
RATE_WINDOW_S = 60


@record(frozen=True, slots=True, kw_only=True)
class QueueStat:
    """One queue now: tasks by state, claims started in the last minute, and its limits."""

    queue: str
    ready: int  # claimable now (run_after has passed)
    delayed: int  # ready, but not before run_after
    blocked: int
    running: int
    started_last_minute: int
    limits: QueueLimits

    @property
    def waiting(self) -> int:
        """The tasks max_ready counts: ready (delayed or not) and blocked."""
        return self.ready + self.delayed + self.blocked

    @property
    def held(self) -> str | None:
        """Why claims pass this queue by right now, or None if they do not."""
        limits = self.limits
        if limits.max_running is not None and self.running >= limits.max_running:
            return f"at max_running ({self.running} of {limits.max_running} running)"
        if limits.rate is not None and self.started_last_minute >= limits.rate:
            return (
                f"at its rate ({self.started_last_minute} started in the last minute, "
                f"limit {limits.rate:g} per minute)"
            )
        return None

    @property
    def full(self) -> bool:
        """Whether `corral add` to this queue is refused now."""
        return self.limits.max_ready is not None and self.waiting >= self.limits.max_ready

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md, `queue list`)."""
        return {
            "queue": self.queue,
            "ready": self.ready,
            "delayed": self.delayed,
            "blocked": self.blocked,
            "running": self.running,
            "started_last_minute": self.started_last_minute,
            "max_ready": self.limits.max_ready,
            "max_running": self.limits.max_running,
            "rate": self.limits.rate,
            "held": self.held,
            "full": self.full,
        }
