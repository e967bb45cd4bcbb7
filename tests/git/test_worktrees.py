"""Worktrees in a real repository: create, reuse, fresh names, removal that loses nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from corral.foundation.errors import InvalidInput, Refused
from corral.git import repo as gitmod
from corral.git.repo import Git, GitUnavailable, parse_version
from corral.git.worktrees import WorktreeConfig, Worktrees

from .conftest import commit_file, git


def _trees(repo: Path) -> Worktrees:
    return Worktrees(Git(str(repo)), WorktreeConfig())


def test_create_puts_the_task_on_its_own_branch_under_corral_worktrees(repo):
    """A new worktree lives in .corral/worktrees on corral/WORKER/TASK, from the base."""
    trees = _trees(repo)
    plan = trees.plan("w1", "t-1", "main", None)
    start = trees.create(plan)
    assert "corral/w1/t-1" == plan.branch
    assert str(repo / ".corral" / "worktrees" / "corral-w1-t-1") == plan.path
    assert git(repo, "rev-parse", "main") == start
    assert "corral/w1/t-1" == git(plan.path, "branch", "--show-current")
    assert [plan.path] == [t.path for t in trees.trees()]


def test_a_taken_branch_or_path_gets_a_fresh_name(repo):
    """A branch that exists already (not the task's) and a path in the way are not reused."""
    git(repo, "branch", "corral/w1/t-1")
    (repo / ".corral" / "worktrees" / "corral-w1-t-1-2").mkdir(parents=True)
    trees = _trees(repo)
    plan = trees.plan("w1", "t-1", "main", None)
    trees.create(plan)
    assert "corral/w1/t-1-2" == plan.branch
    assert plan.path.endswith("corral-w1-t-1-2-2")


def test_the_tasks_own_branch_is_reused_with_its_worktree_or_a_new_one(repo):
    """Resuming: the same branch, in the same worktree if it still exists, else a new one."""
    trees = _trees(repo)
    first = trees.plan("w1", "t-1", "main", None)
    trees.create(first)
    commit_file(first.path, "work.txt", "done\n")
    again = trees.plan("w2", "t-1", "main", first.branch)
    assert (first.branch, first.path, True) == (again.branch, again.path, again.reuse)
    trees.remove(first.path)
    moved = trees.plan("w2", "t-1", "main", first.branch)
    trees.create(moved)
    assert (first.branch, False) == (moved.branch, moved.reuse)
    assert "done\n" == Path(moved.path, "work.txt").read_text()


def test_an_unknown_base_is_invalid_input(repo):
    """A base that names no commit is refused before anything is created."""
    with pytest.raises(InvalidInput, match="base"):
        _trees(repo).plan("w1", "t-1", "nope", None)
    assert not (repo / ".corral").exists()


def test_removing_a_dirty_worktree_keeps_its_work_in_a_backup_ref(repo):
    """Uncommitted and untracked files survive removal as refs/corral/backup/.../wip-*."""
    trees = _trees(repo)
    plan = trees.plan("w1", "t-1", "main", None)
    trees.create(plan)
    Path(plan.path, "shared.txt").write_text("changed\n")
    Path(plan.path, "new.txt").write_text("new\n")
    backup = trees.remove(plan.path)
    assert backup is not None and backup.startswith("refs/corral/backup/corral/w1/t-1/wip-")
    assert not os.path.exists(plan.path)
    assert "changed" == git(repo, "show", f"{backup}:shared.txt")
    assert "new" == git(repo, "show", f"{backup}:new.txt")
    assert [backup] == [ref for ref, _ in trees.backups()]
    assert git(repo, "rev-parse", "main") == git(repo, "rev-parse", plan.branch)


def test_a_clean_worktree_is_removed_without_a_backup(repo):
    """Nothing to save, nothing saved."""
    trees = _trees(repo)
    plan = trees.plan("w1", "t-1", "main", None)
    trees.create(plan)
    assert trees.remove(plan.path) is None
    assert [] == trees.backups()


def test_deleting_an_unmerged_branch_writes_a_backup_first(repo):
    """A branch with commits the base lacks is kept as refs/corral/backup/BRANCH/COMMIT."""
    trees = _trees(repo)
    plan = trees.plan("w1", "t-1", "main", None)
    trees.create(plan)
    head = commit_file(plan.path, "work.txt", "work\n")
    trees.remove(plan.path)
    backup = trees.delete_branch(plan.branch, "main")
    assert f"refs/corral/backup/corral/w1/t-1/{head[:12]}" == backup
    assert not trees.branch_exists(plan.branch)
    assert head == git(repo, "rev-parse", backup)


def test_a_squash_merged_branch_counts_as_merged(repo):
    """Two commits squashed into main: patch-equivalent, so the branch goes without backup."""
    trees = _trees(repo)
    plan = trees.plan("w1", "t-1", "main", None)
    trees.create(plan)
    commit_file(plan.path, "a.txt", "a\n")
    commit_file(plan.path, "b.txt", "b\n")
    assert not trees.is_merged(plan.branch, "main")
    git(repo, "merge", "--squash", plan.branch)
    git(repo, "commit", "--quiet", "-m", "squashed")
    assert trees.is_merged(plan.branch, "main")
    trees.remove(plan.path)
    assert trees.delete_branch(plan.branch, "main") is None
    assert [] == trees.backups()


def test_git_versions_are_read_and_nonsense_refused():
    """2.39.5 and Windows-style versions parse; text that is no version is GitUnavailable."""
    assert (2, 39, 5) == parse_version("git version 2.39.5")
    assert (2, 45, 1) == parse_version("git version 2.45.1.windows.1")
    with pytest.raises(GitUnavailable):
        parse_version("not git")


def test_missing_git_is_git_unavailable_with_exit_code_3(monkeypatch, tmp_path):
    """No git on PATH: a clear message and exit code 3."""
    monkeypatch.setattr(gitmod, "_checked", {})
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GitUnavailable, match="not found") as caught:
        Git(str(tmp_path))
    assert 3 == caught.value.exit_code


def test_an_old_git_is_refused(monkeypatch, tmp_path):
    """A git that says it is 2.20 is refused by name and version."""
    fake = tmp_path / "git"
    fake.write_text("#!/bin/sh\necho 'git version 2.20.1'\n")
    fake.chmod(0o755)
    monkeypatch.setattr(gitmod, "_checked", {})
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GitUnavailable, match=r"git 2\.20\.1 is too old"):
        Git(str(tmp_path))


def test_the_main_checkout_does_not_list_the_worktrees(repo):
    """The worktrees' folder ignores itself: the main checkout's status stays as it was."""
    trees = _trees(repo)
    trees.create(trees.plan("w1", "t-1", "main", None))
    assert "" == git(repo, "status", "--porcelain")


def test_a_tasks_branch_checked_out_in_the_main_checkout_is_refused(repo):
    """corral never runs a task in a checkout of the user's: one line saying where it is."""
    trees = _trees(repo)
    plan = trees.plan("w1", "t-1", "main", None)
    trees.create(plan)
    trees.remove(plan.path)
    git(repo, "checkout", "--quiet", plan.branch)
    with pytest.raises(Refused, match="is checked out at"):
        trees.plan("w2", "t-1", "main", plan.branch)
