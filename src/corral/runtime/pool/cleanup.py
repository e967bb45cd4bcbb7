"""`corral reconcile`: one reconcile pass over the store, one scheduler pass, then the
clean-up of this host.

The reconcile pass (corral.reconcile) repairs the store; the scheduler pass
(corral.schedules.fire_due) fires the schedules that are due, safe beside a running
orchestrator's, since a fire's key makes it once; what the repair frees is cleaned here afterwards:
the worktrees of tasks that no live claim or review needs any more (git.prune), and the
temporary folders of runners that are gone (runtime.worker.tmp). The orchestrator's loop
does the same after each of its passes, and ends leftover processes too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from corral import reconcile, schedules
from corral.git import merge_queue, pull_requests
from corral.git.prune import PruneReport, prune_if_managed, prune_in
from corral.logs import logger
from corral.reconcile import ReconcileReport
from corral.runtime.worker.tmp import prune_tmp
from corral.schedules import PassReport
from corral.settings import Settings
from corral.store import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class CleanupReport:
    """What the pass repaired, the fires the scheduler pass made, the worktrees pruned
    (None: no repository was looked at), the temporary folders removed, and the tasks
    whose pull request was merged or closed (None: `worktree.land` is not `pr`), and the
    approved tasks merged (None: `worktree.merge_approved` is off)."""

    reconciled: ReconcileReport
    fired: PassReport
    pruned: PruneReport | None
    tmp_dirs_removed: tuple[str, ...]
    pull_requests: pull_requests.SettleReport | None = None
    approved_merged: tuple[str, ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `reconcile --json`: counts (docs/cli.md)."""
        counts = {**self.reconciled.to_dict(), **self.fired.to_dict()}
        if self.pruned is not None:
            counts["worktrees_removed"] = len(self.pruned.removed)
        counts["tmp_dirs_removed"] = len(self.tmp_dirs_removed)
        if self.pull_requests is not None:
            counts["prs_merged"] = len(self.pull_requests.merged)
            counts["prs_closed"] = len(self.pull_requests.closed)
        if self.approved_merged is not None:
            counts["approved_merged"] = len(self.approved_merged)
        return counts


def reconcile_and_clean_up(
    store: Store, *, db: str, settings: Settings, repo: str | None = None
) -> CleanupReport:
    """One pass, then the clean-up: worktrees in `repo` (default: the repository above the
    current folder, if it has corral worktrees) and the store `db`'s temporary folders."""
    reconciled = reconcile.reconcile_once(store, settings=settings)
    log = logger("corral.reconcile")
    settled = pull_requests.settle(store, settings.worktree, cwd=repo or os.getcwd(), log=log)
    merged = merge_queue.merge_approved(store, settings.worktree, repo=repo or os.getcwd(), log=log)
    fired = schedules.fire_due(store, settings=settings, actor="reconcile")
    # After the pass: tasks of dead workers no longer hold worktrees.
    pruned = (
        prune_in(store, repo, settings.worktree)
        if repo
        else prune_if_managed(store, os.getcwd(), settings.worktree)
    )
    return CleanupReport(
        reconciled=reconciled,
        fired=fired,
        pruned=pruned,
        tmp_dirs_removed=tuple(prune_tmp(db)),
        pull_requests=settled,
        approved_merged=merged,
    )
