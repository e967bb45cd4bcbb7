"""Orphaned worktrees: the ones no live claim and no review needs any more.

A managed worktree is kept while its branch belongs to a task that is not finished: one
that runs again (ready after a defer, a park at a usage limit, a retry's backoff, changes
requested, or its runner's death), waits for a person, runs, or is reviewed. Its agent's
session resumes only from the folder it was made in, and the work left there is the next
run's. Every other one is removed, its uncommitted work saved as a backup ref first; its
branch goes too when it holds nothing the base lacks. Both are recorded on the task
(store: record_cleanup). Then `git worktree prune` forgets worktrees whose folders vanished.

The pass holds the repository's worktree lock (git/repo_lock.py) from its listing to its
last removal, and the worktrees are listed before the store is read: a runner records a
task's branch before git creates the worktree, so a worktree being born is never taken
for an orphan.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from corral.foundation.errors import NotFound
from corral.foundation.policies import WorktreePolicy
from corral.git.repo import GitUnavailable
from corral.git.worktrees import Worktrees
from corral.model.namespaces import EVERY_NAMESPACE
from corral.model.states import FINAL
from corral.store import Store


@dataclass(frozen=True, slots=True, kw_only=True)
class PruneReport:
    """What one pass removed."""

    removed: tuple[str, ...] = ()
    backups: tuple[str, ...] = ()
    branches_deleted: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "removed": list(self.removed),
            "backups": list(self.backups),
            "branches_deleted": list(self.branches_deleted),
        }


def prune_in(store: Store, repo: str, policy: WorktreePolicy) -> PruneReport:
    """One prune pass in the repository at `repo`, which every namespace may share: it reads
    the branches of all of them (the store's maintenance handle)."""
    trees = Worktrees.open(repo, policy)
    return prune_orphans(
        store.for_maintenance(), trees, base_ref=policy.base or trees.checked_out()
    )


def prune_if_managed(store: Store, folder: str, policy: WorktreePolicy) -> PruneReport | None:
    """A prune pass for a reconcile pass run in `folder`: in the repository above it when it
    has corral worktrees; None when there is nothing to look at (or no usable git)."""
    root = _repository_above(folder)
    if root is None or not os.path.isdir(os.path.join(root, policy.dir)):
        return None  # no corral worktrees here: git is not even started
    try:
        return prune_in(store, root, policy)
    except GitUnavailable:
        return None


def _repository_above(folder: str) -> str | None:
    """The nearest folder from `folder` upwards that holds a `.git`, as git finds it."""
    here = os.path.abspath(folder)
    while not os.path.exists(os.path.join(here, ".git")):
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return here


def prune_orphans(store: Store, trees: Worktrees, *, base_ref: str | None) -> PruneReport:
    """Remove the managed worktrees nothing needs; `base_ref` decides what counts as merged
    (without one, every branch is kept)."""
    with trees.locked():
        return _prune_listed(store, trees, base_ref=base_ref)


def _prune_listed(store: Store, trees: Worktrees, *, base_ref: str | None) -> PruneReport:
    listed = trees.trees()
    branched = store.reviews.branched_tasks()
    needed = {t.branch for t in branched if t.status not in FINAL}
    owners = {t.branch: t.id for t in branched}
    # A remote store shows its token's namespace's branches alone: another's, unseen, stay.
    unseen_stay = store.namespace != EVERY_NAMESPACE
    removed, backups, deleted = [], [], []
    for tree in listed:
        if tree.branch in needed or (unseen_stay and tree.branch not in owners):
            continue
        saved = trees.remove(tree.path)
        removed.append(tree.path)
        backups += [saved] if saved else []
        gone = bool(base_ref and tree.branch and trees.is_merged(tree.branch, base_ref))
        if gone:
            assert base_ref is not None and tree.branch is not None
            trees.delete_branch(tree.branch, base_ref)
            deleted.append(tree.branch)
        _record(store, owners.get(tree.branch or ""), saved, branch_deleted=gone)
    trees.prune_git()
    return PruneReport(
        removed=tuple(removed), backups=tuple(backups), branches_deleted=tuple(deleted)
    )


def _record(store: Store, task_id: str | None, backup: str | None, *, branch_deleted: bool) -> None:
    """Note on the branch's task what the pass did to its work (a task deleted meanwhile:
    nothing to note)."""
    if task_id is None:
        return
    try:
        store.reviews.record_cleanup(
            task_id,
            token=None,
            backups=(backup,) if backup else (),
            branch_deleted=branch_deleted,
            actor="prune",
        )
    except NotFound:
        return
