"""Landing a task's branch on a repository of 5,000 files: corral beside `git merge` by hand.

One generated repository (5,000 files of ~200 bytes in 50 folders, checked out on main in
its root, as a user's repository is). Each round makes two branches from main's head with
one commit each (a different file each), then lands one through corral and merges the
other by hand, alternating which goes first so drift in the machine's load falls on both:

- corral: what a runner does from the moment its task's command exits to the work being
  on the base: the worktree's head (`final_commit`), then `TaskWorktrees.land` (the merge
  lock, the task read, `git merge-tree`, `commit-tree`, the base's checkout fast-forwarded,
  the land recorded in the store under the claim's token). The worktree was entered through
  `TaskWorktrees.enter` under a real claim, as a runner enters it.
- git: `git merge --no-ff --no-edit BRANCH` in the root checkout: the same merge commit,
  the same files updated.

Target (issue 14): corral's median at most 1.2x git's.

    .venv/bin/python bench/landing.py [--files 5000] [--rounds 15]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import subprocess
import time

import corral
from corral.foundation.settings import Settings
from corral.git.repo import Git
from corral.git.task_worktrees import TaskWorktrees
from corral.git.worktrees import WorktreeConfig, Worktrees
from corral.model.tasks import NewTask
from measure import Verdicts, banner, ms, new_store, register_worker, table, temp_dir
from worktree_ops import ENV, generate, git

TARGET_RATIO = 1.2


def _commit_in(path: str, name: str, text: str) -> None:
    with open(os.path.join(path, name), "w") as handle:
        handle.write(text)
    git(path, "add", name)
    git(path, "commit", "--quiet", "-m", f"edit {name}")


def corral_land(store: corral.Store, tasks: TaskWorktrees, worker_id: str, n: int) -> float:
    """Claim a task, enter its worktree, commit there; then time what follows the exit."""
    task = corral.enqueue(store, NewTask(title=f"bench {n}"))
    claim = corral.claim(store, task.id, worker_id)
    running = store.tasks.get_task(task.id)
    entered = tasks.enter(running, claim.token, worker_id)
    _commit_in(entered.path, f"pkg{n % 50:02d}/corral{n}.py", f"VALUE = {n}\n")
    start = time.perf_counter()
    error = tasks.land(store.tasks.get_task(task.id), claim.token, tasks.final_commit(task.id))
    took = time.perf_counter() - start
    assert error is None, error
    corral.complete(store, task.id, token=claim.token)
    tasks.leave(task.id)
    return took


def git_merge(root: str, n: int) -> float:
    """Make a branch with one commit through a worktree, then time `git merge` of it."""
    path = os.path.join(root, ".corral", "bare", f"b{n}")
    git(root, "worktree", "add", "--quiet", "-b", f"bare/{n}", path, "main")
    _commit_in(path, f"pkg{n % 50:02d}/bare{n}.py", f"VALUE = {n}\n")
    start = time.perf_counter()
    subprocess.run(
        ["git", "merge", "--no-ff", "--no-edit", "--quiet", f"bare/{n}"],
        cwd=root,
        env=ENV,
        check=True,
        capture_output=True,
    )
    took = time.perf_counter() - start
    git(root, "worktree", "remove", path)
    return took


def main() -> int:
    """Measure, print the table and the verdict."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    banner(
        "landing",
        f"{args.files} files, {args.rounds} rounds, corral's land and git merge alternating",
    )
    os.environ.update({k: v for k, v in ENV.items() if k.startswith("GIT_")})
    with temp_dir("landing") as tmp:
        root = os.path.join(tmp, "repo")
        generate(root, args.files)
        git(root, "config", "core.untrackedCache", "true")
        store = new_store(os.path.join(tmp, "corral.db"))
        worker_id = register_worker(store, "bench")
        quiet = logging.getLogger("corral.bench.landing")
        quiet.setLevel(logging.WARNING)
        trees = Worktrees(Git(root), WorktreeConfig())
        tasks = TaskWorktrees(
            store,
            trees,
            worker_name="bench",
            base_ref="main",
            policy=Settings().worktree,
            log=quiet,
        )
        ours, theirs = [], []
        for n in range(args.rounds):
            if n % 2 == 0:
                ours.append(corral_land(store, tasks, worker_id, n))
                theirs.append(git_merge(root, n))
            else:
                theirs.append(git_merge(root, n))
                ours.append(corral_land(store, tasks, worker_id, n))
        landed = int(Git(root).out("rev-list", "--count", "--merges", "main"))
        store.close()
    corral_s, git_s = statistics.median(ours), statistics.median(theirs)
    print(
        table(
            ["", "median ms", "min ms", "max ms"],
            [
                ("corral: run exit to work on main", ms(corral_s), ms(min(ours)), ms(max(ours))),
                ("git merge by hand", ms(git_s), ms(min(theirs)), ms(max(theirs))),
            ],
        )
    )
    print(f"\nmerge commits on main: {landed} (expected {2 * args.rounds})")
    verdicts = Verdicts("landing")
    ratio = corral_s / git_s
    verdicts.check(
        f"corral's land at most {TARGET_RATIO}x git merge", f"{ratio:.2f}x", ratio <= TARGET_RATIO
    )
    verdicts.check("every land made its merge commit", str(landed), landed == 2 * args.rounds)
    return verdicts.finish()


if __name__ == "__main__":
    raise SystemExit(main())
