"""Events: the append-only record of every state change (what, when, from, to, who, why).

Names are stable and dotted (`task.claimed`, `worker.dead`); docs/state-machines.md
lists them (EVENT_NAMES here). `corral events` lists them and `corral events --follow`
tails them a page at a time (model/event_cursors.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from corral.foundation.durations import iso
from corral.foundation.records import record


@record(frozen=True, slots=True, kw_only=True)
class Event:
    """One state change."""

    id: int
    at: datetime
    name: str
    task_id: str | None
    worker_id: str | None
    token: int | None
    from_status: str | None
    to_status: str | None
    actor: str
    reason: str | None
    data: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "id": self.id,
            "at": iso(self.at),
            "name": self.name,
            "task_id": self.task_id,
            "worker_id": self.worker_id,
            "token": self.token,
            "from_status": self.from_status,
            "to_status": self.to_status,
            "actor": self.actor,
            "reason": self.reason,
            "data": self.data,
        }


@record(frozen=True, slots=True, kw_only=True)
class EventFilter:
    """Which events `list_events` returns: the newest `limit` after `after_id`, of the
    task, worker and names given, written at `since_at` or later.

    On PostgreSQL an event may commit after one with a higher id (docs/state-machines.md,
    Events): a reader that follows the log should use `store.events.events_page`, not `after_id`.
    """

    task_id: str | None = None
    worker_id: str | None = None
    names: tuple[str, ...] = ()
    since_at: datetime | None = None
    after_id: int = 0
    limit: int = 50
    before_id: int | None = None  # only events older than this one (the page before's first)


# Every event name the store writes, as docs/state-machines.md lists them.
EVENT_NAMES = (
    "task.created",
    "task.checks_failed",
    "task.unblocked",
    "task.blocked",
    "task.claimed",
    "task.renewed",
    "task.released",
    "task.deferred",
    "task.completed",
    "task.retry_scheduled",
    "task.failed",
    "task.lease_expired",
    "task.crashed",
    "task.orphan_recovered",
    "task.waiting",
    "task.answered",
    "task.cancelled",
    "task.retried",
    "task.reprioritised",
    "task.branch_recorded",
    "task.submitted",
    "task.approved",
    "task.changes_requested",
    "task.merged",
    "task.merge_conflict",
    "task.pr_merged",
    "task.pr_closed",
    "task.landed",
    "task.land_conflict",
    "task.outcome",
    "task.tests_disabled",
    "task.branch_cleaned_up",
    "task.pruned_unlanded",
    "review.stale",
    "claim.closed",
    "run.started",
    "run.waiting",
    "run.finished",
    "worker.registered",
    "worker.started",
    "worker.recovered",
    "worker.draining",
    "worker.stale",
    "worker.dead",
    "worker.offline",
    "worker.status_fixed",
    "provider.set",
    "provider.parked",
    "notify.delivered",
    "notify.gave_up",
    "budget.day_cap",
    "token.created",
    "token.revoked",
    "schedule.added",
    "schedule.paused",
    "schedule.resumed",
    "schedule.removed",
)
