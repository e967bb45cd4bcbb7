"""Claims (leases) and the fencing token.

Invariants, enforced by the store:
- At most one active claim per task: a partial unique index, not code alone.
- The token is the claim's id, drawn from a sequence that only grows, so a newer claim
  on the same task always carries a larger token than any older one.
- renew, release, complete and fail name the token they hold; a token whose claim is no
  longer active is refused with `StaleToken` and changes nothing. Without a token the
  caller acts as an operator on whatever claim is active.
- A claim past `lease_expires_at` stays its holder's until the reconciler expires it:
  nobody else can claim the task before then, so finishing late wastes no work.
- Heartbeats extend the holder's active leases, never past `deadline_at` (claimed_at +
  the task's timeout). Explicit renewals are bounded by `max_renewals`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from corral.foundation.durations import iso
from corral.foundation.records import record
from corral.model.states import ClaimStatus


@record(frozen=True, slots=True, kw_only=True)
class Claim:
    """One lease of one task by one worker."""

    token: int
    task_id: str
    worker_id: str
    status: ClaimStatus
    lease_s: float
    claimed_at: datetime
    lease_expires_at: datetime
    deadline_at: datetime | None
    renewals: int

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "task_id": self.task_id,
            "worker_id": self.worker_id,
            "token": self.token,
            "status": str(self.status),
            "claimed_at": iso(self.claimed_at),
            "lease_expires_at": iso(self.lease_expires_at),
            "deadline_at": iso(self.deadline_at),
            "renewals": self.renewals,
        }


@record(frozen=True, slots=True, kw_only=True)
class RunningTask:
    """An active claim with its task's title and the run it started, if one did: a line of
    `corral status --watch`."""

    token: int
    task_id: str
    title: str
    queue: str
    worker_id: str
    claimed_at: datetime
    run_id: str | None
    transcript_path: str | None
    stderr_path: str | None

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of a running task (docs/cli.md)."""
        return {
            "task_id": self.task_id,
            "title": self.title,
            "queue": self.queue,
            "worker_id": self.worker_id,
            "token": self.token,
            "claimed_at": iso(self.claimed_at),
            "run_id": self.run_id,
            "transcript_path": self.transcript_path,
            "stderr_path": self.stderr_path,
        }
