"""An orchestrator's upkeep of its store and host: reconcile and scheduler passes, clean-ups.

The leader (SQLite's sole holder, or PostgreSQL's leader) reconciles and fires the due
schedules (corral.schedules.fire_due, every scheduler_interval_s): `reconcile_once`
repairs what dead workers and expired leases left in the store, and the next beat of the
state row records the pass (`reconciled`). Every `retention.interval` its pass also
prunes what `[retention]` says is old enough (corral/retention.py: the runs' files it
removes are this host's). Every orchestrator, leader or standby, cleans up its own host
after the dead: processes that outlived their run, workers' temporary directories, and
orphaned worktrees of the repository it runs in. Both raise StoreError
when the store cannot be reached: the orchestrator's loop notes the outage (outage.py)
and runs the interval again as soon as the store is back; from then on, the passes do
not hold the outage's silence against workers and leases (`store_back`).
"""

from __future__ import annotations

import logging
import os
import random
from datetime import datetime

from corral import reconcile, retention, schedules
from corral.clock import Clock
from corral.errors import CorralError, StoreError
from corral.git import merge_queue, pull_requests
from corral.git.prune import prune_if_managed
from corral.logs import event
from corral.runtime.pool import leftovers
from corral.runtime.worker.tmp import prune_tmp
from corral.settings import Settings
from corral.store import Store, is_http_url


class Upkeep:
    """The reconcile passes and host clean-ups of one orchestrator."""

    def __init__(
        self, store: Store, *, settings: Settings, db: str, clock: Clock, log: logging.Logger
    ) -> None:
        self._store, self._settings, self._db = store, settings, db
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
        """One reconcile pass (its repairs logged), then this host's clean-up."""
        report = reconcile.reconcile_once(
            self._store, settings=self._settings, rng=self._rng, back_at=self._back_at
        )
        if report.total:
            counts = {k: v for k, v in report.to_dict().items() if v}
            event(self._log, "reconcile.repaired", **counts)
        self.reconciled = True  # the next beat records the pass
        self._land_reviewed()
        self.clean_up()
        self._retain()

    def _land_reviewed(self) -> None:
        """With `worktree.land = pr`: settle the tasks whose pull request was merged or
        closed (git/pull_requests.py); with `worktree.merge_approved`, merge the approved
        tasks (git/merge_queue.py). A failure is logged; the next pass tries again."""
        try:
            pull_requests.settle(
                self._store, self._settings.worktree, cwd=os.getcwd(), log=self._log
            )
            merge_queue.merge_approved(
                self._store, self._settings.worktree, repo=os.getcwd(), log=self._log
            )
        except StoreError:
            raise
        except CorralError as exc:
            event(self._log, "reconcile.land_failed", logging.WARNING, error=exc.message)

    def _retain(self) -> None:
        """A retention pass, when one is due; never through `corral serve` (the runs'
        files are on the store's host: its own orchestrator or `corral prune` there)."""
        if is_http_url(self._store.url):
            return
        now = self._clock.monotonic()
        if (
            self._retained_at is not None
            and now - self._retained_at < self._settings.retention_interval_s
        ):
            return
        self._retained_at = now
        s = self._settings
        ages = retention.Ages(
            finished_s=s.retention_finished_after_s,
            events_s=s.retention_events_after_s,
            workers_s=s.retention_workers_after_s,
        )
        pruned = retention.prune(self._store, ages, unlanded=s.retention_unlanded_work)
        if pruned.total:
            counts = {k: v for k, v in pruned.to_dict().items() if v and k != "dry_run"}
            event(self._log, "retention.pruned", **counts)

    def fire_schedules(self) -> None:
        """One scheduler pass: the fires of the schedules that are due (logged)."""
        report = schedules.fire_due(self._store, settings=self._settings)
        if report.created or report.skipped or report.missed:
            event(self._log, "schedules.fired", **report.to_dict())

    def clean_up(self) -> None:
        """What finished runs and dead workers left on this host: processes, temporary
        directories, and orphaned worktrees of the repository the orchestrator runs in
        (as `corral reconcile` removes them)."""
        for leftover in leftovers.end(self._store, clock=self._clock):
            event(self._log, "run.leftover_ended", pid=leftover.pid, run_id=leftover.run_id)
        for path in prune_tmp(self._db):
            event(self._log, "worker.tmp_removed", path=path)
        try:
            pruned = prune_if_managed(self._store, os.getcwd(), self._settings.worktree)
        except StoreError:
            raise  # an outage, the loop's to note; not a failure of the prune
        except CorralError as exc:
            event(self._log, "worktree.prune_failed", logging.WARNING, error=exc.message)
            return
        for path in pruned.removed if pruned else ():
            event(self._log, "worktree.removed", path=path)
