"""What corral commits of an agent's leftovers (git/run_commit.py), in a real repository."""

from __future__ import annotations

from pathlib import Path

import pytest

from corral.git.repo import Git
from corral.git.run_commit import CommitFailed, commit_left, message_of

from .conftest import git

AUTHOR = "Corral Bot <bot@example.com>"


def _left(repo: Path) -> None:
    """What an agent leaves: an edit, a new file, an ignored file, corral's own files."""
    (repo / ".gitignore").write_text("build/\n")
    (repo / "shared.txt").write_text("one\nTWO\nthree\n")
    (repo / "new.txt").write_text("new\n")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("object\n")
    (repo / ".corral" / "runs").mkdir(parents=True)
    (repo / ".corral" / "runs" / "r-1.jsonl").write_text("{}\n")
    (repo / "sub" / ".corral").mkdir(parents=True)
    (repo / "sub" / ".corral" / "corral.db").write_text("db\n")
    (repo / "r-1.prompt").write_text("the prompt\n")


def test_everything_left_is_committed_but_ignored_and_corral_files(repo):
    """Edits, new files and .gitignore itself are committed; ignored files, anything under a
    .corral folder and the files corral wrote for the run are not, and stay on disk."""
    _left(repo)
    made = commit_left(
        Git(str(repo)),
        message=message_of("Fix the parser", "t-1", "r-1"),
        author=AUTHOR,
        written=[str(repo / "r-1.prompt"), None, "/elsewhere/r-1.jsonl"],
    )
    assert git(repo, "rev-parse", "HEAD") == made
    committed = git(repo, "show", "--name-only", "--format=", "HEAD").splitlines()
    assert [".gitignore", "new.txt", "shared.txt"] == sorted(committed)
    untracked = git(repo, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert {"?? .corral/runs/r-1.jsonl", "?? r-1.prompt", "?? sub/.corral/corral.db"} == set(
        untracked
    )


def test_the_commit_has_the_tasks_message_and_the_configured_author(repo):
    """The message names the title, the task and the run; author and committer are the
    configured identity."""
    (repo / "new.txt").write_text("new\n")
    commit_left(Git(str(repo)), message=message_of("Fix it", "t-9", "r-3"), author=AUTHOR)
    shown = git(repo, "log", "-1", "--format=%an <%ae>|%cn <%ce>|%B")
    assert f"{AUTHOR}|{AUTHOR}|Fix it\n\ncorral task t-9, run r-3" == shown


def test_nothing_left_commits_nothing(repo):
    """A clean worktree (or only ignored and corral's files): no commit, None."""
    head = git(repo, "rev-parse", "HEAD")
    (repo / ".corral").mkdir()
    (repo / ".corral" / "x").write_text("x\n")
    assert commit_left(Git(str(repo)), message="m", author=AUTHOR) is None
    assert head == git(repo, "rev-parse", "HEAD")


def test_a_hook_that_refuses_fails_with_the_tail_of_its_output(repo):
    """A pre-commit hook exits 1: CommitFailed with the hook's words; no commit made."""
    hook = repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'lint: trailing whitespace in new.txt' >&2\nexit 1\n")
    hook.chmod(0o755)
    head = git(repo, "rev-parse", "HEAD")
    (repo / "new.txt").write_text("new \n")
    with pytest.raises(CommitFailed) as failed:
        commit_left(Git(str(repo)), message="m", author=AUTHOR)
    assert "lint: trailing whitespace in new.txt" in failed.value.message
    assert head == git(repo, "rev-parse", "HEAD")


def test_a_merge_resolved_but_not_committed_is_committed_as_a_merge(repo):
    """An agent that merged the base in, settled the conflict on its own side and left it:
    the merge is committed with both parents, though the files equal the branch's."""
    git(repo, "checkout", "-q", "-b", "task")
    (repo / "shared.txt").write_text("task's line\n")
    git(repo, "commit", "-qam", "task")
    git(repo, "checkout", "-q", "-")
    (repo / "shared.txt").write_text("base's line\n")
    git(repo, "commit", "-qam", "base")
    base = git(repo, "rev-parse", "HEAD")
    git(repo, "checkout", "-q", "task")
    assert 0 != Git(str(repo)).run("merge", "--no-edit", base).code  # a conflict
    git(repo, "checkout", "--ours", "--", "shared.txt")
    made = commit_left(Git(str(repo)), message=message_of("Merge", "t-1", "r-1"), author=AUTHOR)
    assert made is not None
    parents = git(repo, "log", "-1", "--format=%P", made).split()
    assert (2, base) == (len(parents), parents[1])
