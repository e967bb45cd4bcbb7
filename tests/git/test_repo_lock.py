"""The repository lock: one holder across processes and threads, re-entrant in its holder,
and what it is for: git's worktree bookkeeping changed by two processes at once."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tests.git.conftest import git

from corral.foundation.settings import Settings
from corral.git.repo_lock import NAMES, WORKTREE_LOCK, lock_files, repo_lock
from corral.git.worktrees import Worktrees

TRY_LOCK = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    sys.exit(1)
sys.exit(0)
"""


def other_process_can_lock(path: str) -> bool:
    proc = subprocess.run([sys.executable, "-c", TRY_LOCK, path], check=False)
    return proc.returncode == 0


def test_the_holder_takes_it_again_and_other_processes_wait_until_it_lets_go(
    tmp_path: Path,
) -> None:
    lock = repo_lock(str(tmp_path), WORKTREE_LOCK)
    assert lock is repo_lock(str(tmp_path), WORKTREE_LOCK)  # one per file and process
    with lock.held():
        with lock.held():
            assert not other_process_can_lock(lock.path)
        assert not other_process_can_lock(lock.path)  # still held by the outer block
    assert other_process_can_lock(lock.path)


def test_another_thread_waits_for_the_holder(tmp_path: Path) -> None:
    lock = repo_lock(str(tmp_path), WORKTREE_LOCK)
    entered, order = threading.Event(), []

    def second() -> None:
        entered.set()
        with lock.held():
            order.append("second")

    with lock.held():
        thread = threading.Thread(target=second)
        thread.start()
        entered.wait(5)
        thread.join(0.05)  # it cannot get in while the lock is held
        order.append("first")
    thread.join(5)
    assert ["first", "second"] == order


def test_a_lock_held_by_a_killed_process_is_free_again(tmp_path: Path) -> None:
    path = str(tmp_path / WORKTREE_LOCK)
    hold = (
        "import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
        "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); sys.stdin.read()"
    )
    with subprocess.Popen(
        [sys.executable, "-c", hold, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None and "held" == holder.stdout.readline().strip()
        assert not other_process_can_lock(path)
        holder.kill()
    with repo_lock(str(tmp_path), WORKTREE_LOCK).held():
        assert not other_process_can_lock(path)


def test_every_lock_is_one_the_sandbox_knows_of(tmp_path: Path) -> None:
    """A name outside NAMES is refused (a sandbox would not cover its file), and
    lock_files makes each known file, empty, and leaves what it cannot make out."""
    with pytest.raises(ValueError, match=r"corral-other\.lock: not a lock of corral's"):
        repo_lock(str(tmp_path), "corral-other.lock")
    made = lock_files(str(tmp_path))
    assert [str(tmp_path / name) for name in NAMES] == list(made)
    assert all(0 == Path(path).stat().st_size for path in made)
    assert () == lock_files(str(tmp_path / "missing"))


HOOK = """#!/bin/sh
# Is corral's worktree lock held while git runs this hook? `flock -n` gets it only if free.
lock="$(git rev-parse --path-format=absolute --git-common-dir)/corral-worktrees.lock"
if flock -n "$lock" true; then state=free; else state=held; fi
echo "$STEP $state" >> "$LOG"
"""


def test_git_changes_its_worktree_bookkeeping_only_under_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`git worktree add` and `git branch -D` run with the lock held (git's own hooks, run
    inside them, look). Unlocked, a `git branch -D` beside another process's `git worktree
    add` failed about once in 1,000 ("failed to read .git/worktrees/NAME/commondir")."""
    repo, log = tmp_path / "repo", tmp_path / "hooks.log"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "commit", "-q", "--allow-empty", "-m", "start")
    for name in ("post-checkout", "reference-transaction"):
        hook = repo / ".git" / "hooks" / name
        hook.write_text(HOOK)
        hook.chmod(0o755)
    monkeypatch.setenv("LOG", str(log))
    trees = Worktrees.open(str(repo), Settings().worktree)
    plan = trees.plan("w", "t-1", "main", None)
    monkeypatch.setenv("STEP", "create")
    trees.create(plan)
    monkeypatch.setenv("STEP", "work")  # the agent's own commit: not corral's to lock
    git(plan.path, "commit", "-q", "--allow-empty", "-m", "work")
    monkeypatch.setenv("STEP", "remove")
    trees.remove(plan.path)
    trees.delete_branch(plan.branch, "main")
    seen = set(log.read_text().splitlines())
    assert {"create held", "work free", "remove held"} == seen
