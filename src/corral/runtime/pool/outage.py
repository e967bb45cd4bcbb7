"""A store outage as the orchestrator lives through it: noticed once, probed, ended once.

Once running, an orchestrator never exits because its store cannot be reached. Every
store call of its loop (a beat, a reconcile pass, a try to lead, a clean-up) that fails
with `StoreError` is noted here instead; the pool is supervised meanwhile as ever.

    reachable ─a call fails─► out: `store.unreachable error=...` (logged once); so does
        a call that got through only after waiting longer than an outage's worth (a
        SQLite file locked while this process queued behind other writers), which the
        next beat then ends
    out ─each failed call─► the next beat comes after a capped backoff with jitter
        (RETRY_MIN_S doubling to RETRY_MAX_S, times a random 0.5 to 1), so the return
        is seen soon and a fleet of orchestrators does not knock in step
    out ─a beat succeeds─► reachable: `store.reachable outage_s=...` (logged once, with
        its length); the role's interval runs at once: a leader reconciles, a standby
        (or a leader whose lock went with its session) contests the lock

Only a beat ends an outage: it always writes to the store, where an interval may touch
nothing (a standby whose lock try failed quietly) and prove nothing. Intervals wait
meanwhile, so that no reconcile pass runs before the one that knows when the store came
back (and so does not hold the outage's silence against workers: corral.model.recovery).
"""

from __future__ import annotations

import logging
import random

from corral.foundation.clock import Clock
from corral.foundation.errors import StoreError
from corral.foundation.logs import event

RETRY_MIN_S = 0.1  # the first probe after a failure: a blip is over within it
RETRY_MAX_S = 1.0  # the longest wait between probes: the return is seen within it


class Outage:
    """Whether the store is out, since when, and when to look again."""

    def __init__(self, *, clock: Clock, log: logging.Logger, rng: random.Random) -> None:
        self._clock, self._log, self._rng = clock, log, rng
        self._since: float | None = None  # monotonic: the first failure of this outage
        self._backoff_s = 0.0

    @property
    def ongoing(self) -> bool:
        """Whether the last store call failed."""
        return self._since is not None

    def failed(self, exc: StoreError, *, began_at: float) -> None:
        """A store call that began at `began_at` (monotonic) failed: the outage starts
        then (logged now), or goes on (the backoff grows). A call may wait long before it
        fails (SQLite's busy timeout): the outage is as old as the wait."""
        if self._since is None:
            self._since, self._backoff_s = began_at, RETRY_MIN_S
            event(self._log, "store.unreachable", logging.WARNING, error=exc.message)
        else:
            self._backoff_s = min(RETRY_MAX_S, self._backoff_s * 2)

    def retry_s(self) -> float:
        """Seconds until the next probe: the backoff, with jitter."""
        return self._backoff_s * self._rng.uniform(0.5, 1.0)

    def reached(self) -> bool:
        """A store call succeeded; True if that ended an outage (logged with its length)."""
        if self._since is None:
            return False
        outage_s = self._clock.monotonic() - self._since
        self._since = None
        event(self._log, "store.reachable", outage_s=round(outage_s, 3))
        return True
