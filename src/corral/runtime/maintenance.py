"""The maintenance pass: `run_once(...) -> MaintenanceReport`, what the orchestrator's loop
runs on its intervals and `corral reconcile` runs once.

One pass does, in this order, the parts `Due` names (a loop runs each on its own
interval; `corral reconcile` runs them all):

    repair      the reconcile pass (corral.usecases.reconcile: silent workers, expired leases,
                orphans, drift, stale reviews), then the reviewed tasks' landing: pull
                requests merged or closed (git/pull_requests.py, `worktree.land = pr`)
                and approved tasks merged (git/merge_queue.py, `worktree.merge_approved`)
    schedules   the fires that are due (corral.usecases.schedules; a fire's key makes it once,
                so two passes at once are safe)
    host        what finished runs and dead workers left on this host: processes marked
                with a run that is over (leftovers.py, only those of this user holding
                the run's key), workers' temporary folders (runtime/worker/tmp.py), and the
                orphaned worktrees of the repository (git/prune.py)
    retention   what `[retention]` says is old enough (corral.usecases.retention); never through
                `corral serve`: the runs' files are on the store's host

Decisions stay where they are (model/recovery.py, model/schedules.py, the store's
compare-and-set); the pass composes the pieces and counts what they did. It never sleeps
but for a leftover's SIGTERM grace, and never logs a count: the caller renders the report
(the orchestrator's upkeep logs it, the CLI prints it). A piece that fails for a reason
of its own (git, a pull request tool) is recorded in `failures` and the pass goes on; a
StoreError ends the pass (the store is out: the caller's to note).
"""

from __future__ import annotations

import logging
import os
import random
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from corral.foundation.clock import Clock
from corral.foundation.errors import CorralError, StoreError
from corral.foundation.settings import Settings
from corral.git import merge_queue, pull_requests
from corral.git.prune import PruneReport, prune_if_managed, prune_in
from corral.runtime.pool import leftovers
from corral.runtime.pool.leftovers import Leftover
from corral.runtime.worker.tmp import prune_tmp
from corral.store import Store, is_http_url
from corral.usecases import reconcile, retention, schedules
from corral.usecases.reconcile import ReconcileReport
from corral.usecases.retention import Pruned
from corral.usecases.schedules import PassReport


@dataclass(frozen=True, slots=True, kw_only=True)
class Due:
    """Which parts of the pass run this time (module docstring)."""

    repair: bool = True
    schedules: bool = True
    host: bool = True
    retention: bool = True


EVERYTHING = Due()
PRUNED_KINDS = ("tasks", "runs", "files", "events", "workers")  # retention's counts, reported


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """A part of the pass that could not finish, why (one line), and the exit code of its
    error (corral.foundation.errors: a `--repo` that is no repository is bad input, 2)."""

    part: str
    error: str
    exit_code: int = 1

    def __str__(self) -> str:
        return f"{self.part}: {self.error}"


@dataclass(frozen=True, slots=True, kw_only=True)
class MaintenanceReport:
    """What one pass did. A part's field is None when the part did not run or does not
    apply: not due, `worktree.land` is not `pr` (pull_requests), `merge_approved` is off
    (approved_merged), no repository to look at (worktrees), a remote store (retention)."""

    reconciled: ReconcileReport | None = None
    pull_requests: pull_requests.SettleReport | None = None
    approved_merged: tuple[str, ...] | None = None
    fired: PassReport | None = None
    leftovers_ended: tuple[Leftover, ...] = ()
    tmp_dirs_removed: tuple[str, ...] = ()
    worktrees: PruneReport | None = None
    retention: Pruned | None = None
    failures: tuple[Failure, ...] = ()

    def failed(self, part: str, exc: CorralError) -> MaintenanceReport:
        """This report with `part` failed for `exc`."""
        failure = Failure(part=part, error=exc.message, exit_code=exc.exit_code)
        return replace(self, failures=(*self.failures, failure))

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `reconcile --json`: counts, then failures (docs/cli.md)."""
        return {**self.counts(), "failures": [str(f) for f in self.failures]}

    def counts(self) -> dict[str, int]:
        """What each part that ran did, by name (docs/cli.md)."""
        counts: dict[str, int] = {}
        if self.reconciled is not None:
            counts.update(self.reconciled.to_dict())
        if self.fired is not None:
            counts.update(self.fired.to_dict())
        if self.worktrees is not None:
            counts["worktrees_removed"] = len(self.worktrees.removed)
        counts["tmp_dirs_removed"] = len(self.tmp_dirs_removed)
        counts["leftovers_ended"] = len(self.leftovers_ended)
        if self.pull_requests is not None:
            counts["prs_merged"] = len(self.pull_requests.merged)
            counts["prs_closed"] = len(self.pull_requests.closed)
            counts["prs_checks_failed"] = len(self.pull_requests.checks_failed)
            counts["prs_checks_waiting"] = len(self.pull_requests.checks_waiting)
        if self.approved_merged is not None:
            counts["approved_merged"] = len(self.approved_merged)
        if self.retention is not None:
            pruned = self.retention.to_dict()
            counts.update({f"pruned_{k}": pruned[k] for k in PRUNED_KINDS})
        return counts


@dataclass(frozen=True, slots=True, kw_only=True)
class Place:
    """Where the pass runs: the store's URL as its workers were given it (`db`: their
    temporary folders), and the repository (None: the one above the current folder, if
    it has corral worktrees; a named one must be a repository)."""

    db: str
    repo: str | None = None


def run_once(
    store: Store,
    *,
    settings: Settings,
    place: Place,
    clock: Clock,
    log: logging.Logger,
    due: Due = EVERYTHING,
    actor: str = schedules.SCHEDULER,
    rng: random.Random | None = None,
    back_at: datetime | None = None,
) -> MaintenanceReport:
    """One maintenance pass of the parts `due` names; what each did. `actor` is who the
    schedules' fires name; `rng` and `back_at` are the reconcile pass's (corral.usecases.reconcile);
    `log` takes what the landing parts log as they go. The landing acts in `store`'s
    namespace; every other part on its maintenance handle, across every namespace
    (`Store.for_maintenance`): a leftover's run, say, is looked up whatever its namespace."""
    every = store.for_maintenance()
    report = MaintenanceReport()
    if due.repair:
        reconciled = reconcile.reconcile_once(every, settings=settings, rng=rng, back_at=back_at)
        report = _land_reviewed(replace(report, reconciled=reconciled), store, settings, place, log)
    if due.schedules:
        report = replace(report, fired=schedules.fire_due(every, settings=settings, actor=actor))
    if due.host:
        report = _clean_up_host(report, every, settings, place, clock)
    if due.retention and not is_http_url(store.url):
        report = replace(report, retention=_retain(every, settings))
    return report


def _land_reviewed(
    report: MaintenanceReport, store: Store, settings: Settings, place: Place, log: logging.Logger
) -> MaintenanceReport:
    """Settle the tasks whose pull request was merged or closed, merge the approved ones."""
    repo = place.repo or os.getcwd()
    try:
        settled = pull_requests.settle(store, settings.worktree, cwd=repo, log=log)
        merged = merge_queue.merge_approved(store, settings.worktree, repo=repo, log=log)
    except StoreError:
        raise  # an outage, the caller's to note; not a failure of the landing
    except CorralError as exc:
        return report.failed("landing", exc)
    return replace(report, pull_requests=settled, approved_merged=merged)


def _clean_up_host(
    report: MaintenanceReport, store: Store, settings: Settings, place: Place, clock: Clock
) -> MaintenanceReport:
    """End this store's leftover processes, remove gone workers' temporary folders, then
    the orphaned worktrees of the repository (after the repair, tasks of dead workers no
    longer hold theirs)."""
    report = replace(
        report,
        leftovers_ended=tuple(leftovers.end(store, clock=clock)),
        tmp_dirs_removed=tuple(prune_tmp(place.db)),
    )
    worktrees: PruneReport | None
    try:
        if place.repo:
            worktrees = prune_in(store, place.repo, settings.worktree)
        else:
            worktrees = prune_if_managed(store, os.getcwd(), settings.worktree)
    except StoreError:
        raise
    except CorralError as exc:
        return report.failed("worktrees", exc)
    return replace(report, worktrees=worktrees)


def _retain(store: Store, settings: Settings) -> Pruned:
    """One retention pass with the ages of `[retention]`."""
    ages = retention.Ages(
        finished_s=settings.retention_finished_after_s,
        events_s=settings.retention_events_after_s,
        workers_s=settings.retention_workers_after_s,
    )
    return retention.prune(store, ages, unlanded=settings.retention_unlanded_work)
