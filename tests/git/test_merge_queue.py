"""`[worktree] merge_approved`: the reconcile pass lands approved tasks one after another,
oldest approval first; tasks editing one file land in turn with no conflict step, and one
git cannot merge goes back to ready with its files."""

from __future__ import annotations

import logging
from pathlib import Path

import corral
from corral.foundation.settings import Settings
from corral.git.merge_queue import merge_approved
from corral.git.merging import GitBranches
from corral.git.worktrees import Worktrees
from corral.model.states import TaskStatus
from corral.model.tasks import NewTask
from corral.usecases import reviews

from .conftest import claim_into_worktree, git

POLICY = Settings(worktree_merge_approved=True).worktree
LINES = [f"line {n}\n" for n in range(12)]


def _approved(store, settings, repo: Path, n: int, line: int, text: str) -> str:
    """A task whose branch changes line `line` of `many.txt` to `text`, approved."""
    trees = Worktrees.open(str(repo), POLICY)
    task = corral.enqueue(store, NewTask(title=f"edit {n}", requires_review=True))
    lines = list(LINES)
    lines[line] = text
    claim, _ = claim_into_worktree(
        store, settings, trees, task.id, f"w{n}", {"many.txt": "".join(lines)}
    )
    reviews.submit(store, task.id, token=claim.token)
    reviews.approve(store, task.id, branches=lambda: GitBranches(trees))
    return task.id


def test_approved_tasks_editing_one_file_all_land_in_turn(store, settings, repo: Path):
    """Four tasks, each changing its own line of one file: one pass lands every one, in
    order of approval, and main has all four lines."""
    (repo / "many.txt").write_text("".join(LINES))
    git(repo, "add", "many.txt")
    git(repo, "commit", "--quiet", "-m", "many")
    ids = [_approved(store, settings, repo, n, 3 * n, f"changed {n}\n") for n in range(4)]
    landed = merge_approved(store, POLICY, repo=str(repo), log=logging.getLogger("t"))
    assert tuple(ids) == landed
    assert [TaskStatus.DONE] * 4 == [store.tasks.get_task(i).status for i in ids]
    text = git(repo, "show", "main:many.txt").splitlines()
    assert [f"changed {n}" for n in range(4)] == [text[3 * n] for n in range(4)]
    trees = Worktrees.open(str(repo), POLICY)
    assert ([], "") == (trees.trees(), git(repo, "branch", "--list", "corral/*"))


def test_one_git_cannot_merge_goes_back_to_ready(store, settings, repo: Path):
    """Two tasks change the same line: the first approved lands, the second is ready again
    with the file recorded; nothing else changed."""
    (repo / "many.txt").write_text("".join(LINES))
    git(repo, "add", "many.txt")
    git(repo, "commit", "--quiet", "-m", "many")
    first = _approved(store, settings, repo, 0, 5, "mine\n")
    second = _approved(store, settings, repo, 1, 5, "theirs\n")
    landed = merge_approved(store, POLICY, repo=str(repo), log=logging.getLogger("t"))
    assert (first,) == landed
    assert TaskStatus.READY == store.tasks.get_task(second).status
    assert ("many.txt",) == store.reviews.get_review(second).conflict_files


def test_off_by_default(store, repo: Path):
    """Without the setting, approved tasks wait for `corral merge`."""
    assert None is merge_approved(
        store, Settings().worktree, repo=str(repo), log=logging.getLogger("t")
    )
