"""A task waiting for a person keeps its worktree (and the work left in it) in a real
repository: no prune pass removes it while it waits; once it is cancelled, one does."""

from __future__ import annotations

from pathlib import Path

import corral
from corral.foundation.settings import Settings
from corral.git.merging import GitBranches
from corral.git.prune import prune_orphans
from corral.git.worktrees import Worktrees
from corral.model.tasks import NewTask
from corral.usecases.landings import Where, branch_states

from .conftest import claim_into_worktree


def test_prune_keeps_a_waiting_tasks_worktree_until_it_no_longer_waits(store, settings, repo):
    """Waiting: the worktree, its uncommitted draft and its branch stay (`working`); cancelled:
    the next pass removes the worktree."""
    trees = Worktrees.open(str(repo), Settings().worktree)
    task = corral.enqueue(store, NewTask(title="asks"), settings=settings)
    claim, path = claim_into_worktree(store, settings, trees, task.id, "w", {"a.txt": "a\n"})
    Path(path, "draft.txt").write_text("not committed yet\n")
    corral.wait(store, task.id, reason="question: which one?", token=claim.token)
    assert () == prune_orphans(store, trees, base_ref="main").removed
    assert "not committed yet\n" == Path(path, "draft.txt").read_text()
    [state] = branch_states(store, GitBranches(trees))
    assert Where.WORKING == state.where
    corral.cancel(store, task.id)
    assert (path,) == prune_orphans(store, trees, base_ref="main").removed
