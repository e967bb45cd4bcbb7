"""Landing's use cases over a real repository, on both stores: land under a claim or for a
done task, conflicts, and where `corral branches` says each branch's work is."""

from __future__ import annotations

from pathlib import Path

import pytest

import corral
from corral.foundation.errors import InvalidTransition, StaleToken
from corral.foundation.settings import Settings
from corral.git.merging import GitBranches
from corral.git.worktrees import Worktrees
from corral.model.reviews import MergeStrategy
from corral.model.states import TaskStatus
from corral.model.tasks import NewTask
from corral.usecases import landings
from corral.usecases.landings import Where

from .conftest import claim_into_worktree, commit_file, git


@pytest.fixture
def trees(repo: Path) -> Worktrees:
    """corral's worktrees of the test repository, default settings."""
    return Worktrees.open(str(repo), Settings().worktree)


@pytest.fixture
def claimed(store, settings, trees):
    """Add a task, claim it, make its worktree and commit `files` there: (task, token)."""

    def run(files: dict[str, str], *, review: bool = False):
        new = NewTask(title="edit", requires_review=review)
        task = corral.enqueue(store, new, settings=settings)
        claim, _ = claim_into_worktree(store, settings, trees, task.id, "w", files)
        return store.tasks.get_task(task.id), claim.token

    return run


def _land(store, trees, task, token):
    repo = GitBranches(trees)
    with repo.locked():
        return landings.land(
            store,
            task,
            repo=repo,
            base="main",
            strategy=MergeStrategy.MERGE,
            token=token,
            actor=f"token:{token}",
        )


def test_a_land_under_the_claim_moves_the_base_and_records_it(store, repo, trees, claimed):
    """The base gets the work; the review keeps the commit; the task is still running."""
    task, token = claimed({"a.txt": "a\n"})
    landed = _land(store, trees, task, token)
    assert git(repo, "rev-parse", "main") == landed.merged_commit
    assert landed.merged_commit == store.reviews.get_review(task.id).merged_commit
    assert TaskStatus.RUNNING == store.tasks.get_task(task.id).status
    assert "a\n" == (repo / "a.txt").read_text()


def test_a_land_under_a_lost_claim_is_refused_in_the_store(store, settings, trees, claimed):
    """The claim expired meanwhile: recording is refused as stale (git has the work)."""
    task, token = claimed({"a.txt": "a\n"})
    corral.release(store, task.id, token=token, settings=settings)
    with pytest.raises(StaleToken):
        _land(store, trees, task, token)


def test_a_conflict_under_the_claim_records_files_and_note_and_changes_nothing(
    store, repo, trees, claimed
):
    """Main moved on the same line: nothing merged, the files and the note kept."""
    task, token = claimed({"shared.txt": "one\nmine\nthree\n"})
    before = commit_file(repo, "shared.txt", "one\ntheirs\nthree\n")
    landed = _land(store, trees, task, token)
    review = store.reviews.get_review(task.id)
    assert (("shared.txt",), ("shared.txt",)) == (landed.conflicts, review.conflict_files)
    assert review.changes_note == landings.conflict_note("main", ("shared.txt",))
    assert (before, TaskStatus.RUNNING) == (
        git(repo, "rev-parse", "main"),
        store.tasks.get_task(task.id).status,
    )


def test_land_kept_of_a_done_task_lands_and_removes_the_branch(
    store, settings, repo, trees, claimed
):
    """corral land: merged, branch and worktree gone; refused for a task not done."""
    task, token = claimed({"a.txt": "a\n"})
    with pytest.raises(corral.Refused, match="it is running, not done"):
        landings.land_kept(
            store, task.id, repo=GitBranches(trees), strategy=MergeStrategy.MERGE, actor="op"
        )
    corral.complete(store, task.id, token=token)
    landed = landings.land_kept(
        store, task.id, repo=GitBranches(trees), strategy=MergeStrategy.SQUASH, actor="op"
    )
    assert git(repo, "rev-parse", "main") == landed.merged_commit
    assert "" == git(repo, "branch", "--list", "corral/*")
    assert [] == trees.trees()


def test_land_kept_that_conflicts_sends_the_done_task_back_to_ready(
    store, settings, repo, trees, claimed
):
    """done -> ready on the same branch with a fresh attempt budget, as a review conflict."""
    task, token = claimed({"shared.txt": "one\nmine\nthree\n"})
    corral.complete(store, task.id, token=token)
    commit_file(repo, "shared.txt", "one\ntheirs\nthree\n")
    landed = landings.land_kept(
        store, task.id, repo=GitBranches(trees), strategy=MergeStrategy.MERGE, actor="op"
    )
    after = store.tasks.get_task(task.id)
    assert (("shared.txt",), TaskStatus.READY, 0) == (
        landed.conflicts,
        after.status,
        after.attempts,
    )
    with pytest.raises(InvalidTransition):
        store.reviews.land_conflict(task.id, token=None, files=("x",), note="n", actor="op")


def test_branches_says_where_each_branch_work_is(store, settings, repo, trees, claimed):
    """working, in review, kept, landed (by merge, or deleted empty), abandoned (backup)."""
    working, _ = claimed({"w.txt": "w\n"})
    reviewed, token = claimed({"r.txt": "r\n"}, review=True)
    corral.complete(store, reviewed.id, token=token)
    kept, token = claimed({"k.txt": "k\n"})
    corral.complete(store, kept.id, token=token)
    landed, token = claimed({"l.txt": "l\n"})
    _land(store, trees, landed, token)
    corral.complete(store, landed.id, token=token)
    gone, token = claimed({"g.txt": "g\n"})
    corral.cancel(store, gone.id)
    for tree in trees.trees():
        if tree.branch == gone.branch:
            trees.remove(tree.path)
    trees.delete_branch(gone.branch, "main")
    found = {s.task.id: s.where for s in landings.branch_states(store, GitBranches(trees))}
    assert {
        working.id: Where.WORKING,
        reviewed.id: Where.IN_REVIEW,
        kept.id: Where.KEPT,
        landed.id: Where.LANDED,
        gone.id: Where.ABANDONED,
    } == found
