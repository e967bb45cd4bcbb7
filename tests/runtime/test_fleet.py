"""The fleet job: a pool of agents with `--worktree` in a repository that `corral init` set
up, on both stores. Real orchestrator, workers, agents and git."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

from corral import NewTask, TaskStatus, enqueue, load_settings

# An agent as careless as real ones: it writes its file and commits everything with
# `git add -A`, which in a shared checkout would sweep up other agents' edits and corral's
# own files.
SWEEPER = """#!/bin/sh
set -e
file=$(sed -n 's/^file=//p')
echo "$CORRAL_TASK_ID" > "$file"
git add -A
git commit --quiet -m "$CORRAL_TASK_ID writes $file"
"""
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
GIT_ENV |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}


def git(folder: Path, *args: str) -> str:
    """git in `folder`; its output."""
    done = subprocess.run(
        ["git", *args],
        cwd=folder,
        env={**os.environ, **GIT_ENV},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_a_pool_of_three_in_worktrees_lands_every_change_and_commits_nothing_of_corral(
    any_pool: Any,
) -> None:
    """12 tasks, each editing its own file, by agents that `git add -A`: every change on
    main, no `.corral` file in any commit, no worktree or branch left, main's checkout
    clean."""
    pool = any_pool
    git(pool.folder, "init", "-q", "-b", "main")
    git(pool.folder, "commit", "-q", "--allow-empty", "-m", "start")
    assert 0 == pool.corral("init").returncode
    agent = pool.folder / "sweeper.sh"
    agent.write_text(SWEEPER)
    agent.chmod(0o755)
    git(pool.folder, "add", "sweeper.sh", "agent.sh")
    git(pool.folder, "commit", "-q", "-m", "the agents")
    settings = load_settings(pool.env)
    tasks = [
        enqueue(
            pool.store, NewTask(title=f"edit {n}", description=f"file=f{n}.txt"), settings=settings
        ).id
        for n in range(12)
    ]
    pool.env["GIT_AUTHOR_NAME"] = "agent"
    pool.env.update(GIT_ENV)
    pool.start("--workers", "3", "--exec", str(agent), "--worktree", workers=None)
    pool.wait(
        lambda: all(pool.store.tasks.get_task(t).status is TaskStatus.DONE for t in tasks), 90
    )
    assert 0 == pool.corral("orchestrator", "stop", "--graceful").returncode

    assert {f"f{n}.txt": tasks[n] for n in range(12)} == {
        f"f{n}.txt": (pool.folder / f"f{n}.txt").read_text().strip() for n in range(12)
    }
    committed = git(pool.folder, "log", "--all", "--name-only", "--format=")
    assert [] == [path for path in committed.splitlines() if ".corral" in path]
    assert [str(pool.folder)] == [
        line.split()[1]
        for line in git(pool.folder, "worktree", "list", "--porcelain").splitlines()
        if line.startswith("worktree ")
    ]
    assert "" == git(pool.folder, "branch", "--list", "corral/*")
    untracked = git(pool.folder, "status", "--porcelain").splitlines()
    assert [] == [line for line in untracked if ".corral" in line or not line.startswith("??")]
