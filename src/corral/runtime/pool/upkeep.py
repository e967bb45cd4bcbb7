"""An orchestrator's upkeep: which parts of the maintenance pass are due, and their logs.

The pass itself is corral.runtime.maintenance (`run_once`), the same one `corral reconcile`
runs; upkeep is the orchestrator's calendar of it and its memory between passes. The
leader (SQLite's sole holder, or PostgreSQL's leader) runs the repair and the host's
clean-up every reconcile interval (the next beat of the state row records the pass:
`reconciled`), the retention part too once every `retention.interval`, and the schedules
part every scheduler_interval_s. A standby runs the host's clean-up alone. Every pass's
counts are logged when they are not zero, as stable events. A pass raises StoreError when
the store cannot be reached: the orchestrator's loop notes the outage (outage.py) and runs
the interval again as soon as the store is back; from then on, the passes do not hold the
outage's silence against workers and leases (`store_back`). Between intervals the
leader asks when the repair next has something to do by time alone (`repair_due_in_s`)
and runs its pass then: a silent worker is marked a second after its heartbeat was due,
not at the next interval.
"""

from __future__ import annotations

import logging
import random
from datetime import datetime

from corral.foundation.clock import Clock
from corral.foundation.logs import event
from corral.foundation.settings import Settings
from corral.runtime import maintenance
from corral.runtime.maintenance import Due, MaintenanceReport, Place
from corral.store import Store
from corral.usecases import reconcile

HOST = Due(repair=False, schedules=False, host=True, retention=False)
SCHEDULES = Due(repair=False, schedules=True, host=False, retention=False)
# The event a part's failure is logged as (corral.runtime.maintenance: Failure.part).
FAILED_EVENTS = {"landing": "reconcile.land_failed", "worktrees": "worktree.prune_failed"}


class Upkeep:
    """The maintenance passes of one orchestrator, each part on its interval."""

    def __init__(
        self, store: Store, *, settings: Settings, db: str, clock: Clock, log: logging.Logger
    ) -> None:
        self._store, self._settings, self._place = store, settings, Place(db=db)
        self._clock, self._log = clock, log
        self._rng = random.Random()
        self._back_at: datetime | None = None  # the store's time at the end of the last outage
        self.reconciled = False  # a pass ran since the last beat of the state row
        self._retained_at: float | None = None  # monotonic time of the last retention pass

    def store_back(self) -> None:
        """The store is reachable again after an outage: the passes from now on do not hold
        its silence against workers and leases (corral.model.recovery)."""
        self._back_at = self._store.now()

    def reconcile(self) -> None:
        """The leader's pass: the repair, this host's clean-up, and retention when due."""
        due = Due(repair=True, schedules=False, host=True, retention=self._retention_due())
        self._run(due)
        self.reconciled = True  # the next beat records the pass

    def repair_due_in_s(self) -> float | None:
        """Seconds until the repair has something to do by time alone, 0 if now (None:
        nothing ever comes due): one snapshot read, nothing written
        (corral.usecases.reconcile.repair_due_in_s)."""
        return reconcile.repair_due_in_s(
            self._store.for_maintenance(), settings=self._settings, back_at=self._back_at
        )

    def fire_schedules(self) -> None:
        """One scheduler pass: the fires of the schedules that are due (logged)."""
        self._run(SCHEDULES)

    def clean_up(self) -> None:
        """What finished runs and dead workers left on this host (a standby's pass)."""
        self._run(HOST)

    def _retention_due(self) -> bool:
        """Whether `retention.interval` has passed since the last retention pass (the
        first pass: due); a due one counts as run, whether it gets through or not."""
        now = self._clock.monotonic()
        last = self._retained_at
        if last is not None and now - last < self._settings.retention_interval_s:
            return False
        self._retained_at = now
        return True

    def _run(self, due: Due) -> None:
        report = maintenance.run_once(
            self._store,
            settings=self._settings,
            place=self._place,
            clock=self._clock,
            log=self._log,
            due=due,
            rng=self._rng,
            back_at=self._back_at,
        )
        _log_report(self._log, report)


def _log_report(log: logging.Logger, report: MaintenanceReport) -> None:
    """The pass's events: its counts when not zero, what it ended or removed, what failed."""
    if report.reconciled is not None and report.reconciled.total:
        counts = {k: v for k, v in report.reconciled.to_dict().items() if v}
        event(log, "reconcile.repaired", **counts)
    fired = report.fired
    if fired is not None and (fired.created or fired.skipped or fired.missed):
        event(log, "schedules.fired", **fired.to_dict())
    for leftover in report.leftovers_ended:
        event(log, "run.leftover_ended", pid=leftover.pid, run_id=leftover.run_id)
    for path in report.tmp_dirs_removed:
        event(log, "worker.tmp_removed", path=path)
    for path in report.worktrees.removed if report.worktrees else ():
        event(log, "worktree.removed", path=path)
    for failure in report.failures:
        event(log, FAILED_EVENTS[failure.part], logging.WARNING, error=failure.error)
    pruned = report.retention
    if pruned is not None and pruned.total:
        counts = {k: v for k, v in pruned.to_dict().items() if v and k != "dry_run"}
        event(log, "retention.pruned", **counts)
