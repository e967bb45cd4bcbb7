"""Commit and land on a remote's main, on a repository of 5,000 files: corral beside
`git add -A && git commit && git push` by hand.

One generated repository (5,000 files of ~200 bytes in 50 folders), cloned bare as the
remote (`origin`, on this machine) and cloned twice: corral's host (`[worktree] remote =
origin`) and the by-hand clone. Each round one task's run and one hand edit each leave one
new file uncommitted; the order alternates, so drift in the machine's load falls on both.
Before the clock starts each side is where it would be: corral's worktree was entered (the
remote's main fetched) as a runner enters it under a real claim; the hand clone pulled.

- corral: from the run's exit to its change on the remote's main: the worktree's changes
  committed (`git add -A`, `git commit`: what the commit step runs), the worktree's head,
  then `TaskWorktrees.land` (the merge lock, the task read, `git rev-parse` of the
  remote's base, its tree and the branch at once, `git merge-tree --write-tree`, `git
  commit-tree`, `git push origin NEW:refs/heads/main`, the remote-tracking ref moved, the
  land recorded in the store under the claim's token).
- git: `git add -A`, `git commit -q -m ...`, `git push -q origin main` in the clone.

Each side's time is split in two, commit (add and commit) and land (corral's) or push
(the hand's), to show where a difference lies: a task's worktree is new, and the first
`git add -A` in a new checkout reads every file git cannot trust by its timestamps.
Target (issue 27): corral's median at most 1.3x the hand's.

    .venv/bin/python bench/land_remote.py [--files 5000] [--rounds 15]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time

import corral
from corral.foundation.settings import Settings
from corral.git.repo import Git
from corral.git.task_worktrees import TaskWorktrees
from corral.git.worktrees import WorktreeConfig, Worktrees
from corral.model.tasks import NewTask
from measure import Verdicts, banner, ms, new_store, register_worker, table, temp_dir
from worktree_ops import ENV, generate, git

TARGET_RATIO = 1.3
POLICY = Settings(worktree_remote="origin").worktree


def _write(path: str, name: str, text: str) -> None:
    with open(os.path.join(path, name), "w") as handle:
        handle.write(text)


def corral_land(
    store: corral.Store, tasks: TaskWorktrees, worker_id: str, n: int
) -> tuple[float, float]:
    """Claim a task, enter its worktree, leave an edit there; then time what follows:
    (seconds to commit, seconds to land)."""
    task = corral.enqueue(store, NewTask(title=f"bench {n}"))
    claim = corral.claim(store, task.id, worker_id)
    entered = tasks.enter(store.tasks.get_task(task.id), claim.token, worker_id)
    _write(entered.path, f"pkg{n % 50:02d}/corral{n}.py", f"VALUE = {n}\n")
    start = time.perf_counter()
    git(entered.path, "add", "-A")
    git(entered.path, "commit", "--quiet", "-m", f"corral: bench {n} ({task.id})")
    committed = time.perf_counter()
    error = tasks.land(store.tasks.get_task(task.id), claim.token, tasks.final_commit(task.id))
    landed = time.perf_counter()
    assert error is None, error
    corral.complete(store, task.id, token=claim.token)
    tasks.leave(task.id)
    return committed - start, landed - committed


def hand_push(clone: str, n: int) -> tuple[float, float]:
    """Pull, leave an edit in the clone; then time add, commit and push by hand:
    (seconds to commit, seconds to push)."""
    git(clone, "pull", "--quiet", "--ff-only", "origin", "main")
    _write(clone, f"pkg{n % 50:02d}/hand{n}.py", f"VALUE = {n}\n")
    start = time.perf_counter()
    git(clone, "add", "-A")
    git(clone, "commit", "--quiet", "-m", f"hand {n}")
    committed = time.perf_counter()
    git(clone, "push", "--quiet", "origin", "main")
    return committed - start, time.perf_counter() - committed


def main() -> int:
    """Measure, print the table and the verdict."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    banner(
        "land_remote",
        f"{args.files} files, {args.rounds} rounds, corral's land and a hand push alternating",
    )
    os.environ.update({k: v for k, v in ENV.items() if k.startswith("GIT_")})
    with temp_dir("land_remote") as tmp:
        seed, origin = os.path.join(tmp, "seed"), os.path.join(tmp, "origin.git")
        generate(seed, args.files)
        git(tmp, "clone", "--quiet", "--bare", seed, origin)
        host, hand = os.path.join(tmp, "host"), os.path.join(tmp, "hand")
        for clone in (host, hand):
            git(tmp, "clone", "--quiet", origin, clone)
            git(clone, "config", "core.untrackedCache", "true")
        store = new_store(os.path.join(tmp, "corral.db"))
        worker_id = register_worker(store, "bench")
        quiet = logging.getLogger("corral.bench.land_remote")
        quiet.setLevel(logging.WARNING)
        trees = Worktrees(Git(host), WorktreeConfig(remote="origin"))
        tasks = TaskWorktrees(
            store, trees, worker_name="bench", base_ref="main", policy=POLICY, log=quiet
        )
        ours: list[tuple[float, float]] = []
        theirs: list[tuple[float, float]] = []
        for n in range(args.rounds):
            if n % 2 == 0:
                ours.append(corral_land(store, tasks, worker_id, n))
                theirs.append(hand_push(hand, n))
            else:
                theirs.append(hand_push(hand, n))
                ours.append(corral_land(store, tasks, worker_id, n))
        on_main = Git(origin).out("ls-tree", "-r", "--name-only", "main").split()
        landed = sum(1 for name in on_main if "/corral" in name or "/hand" in name)
        store.close()
    corral_s = statistics.median(a + b for a, b in ours)
    git_s = statistics.median(a + b for a, b in theirs)
    rows = [
        ("corral: run exit to the remote's main", [a + b for a, b in ours]),
        ("  of which commit (add -A, commit)", [a for a, _ in ours]),
        ("  of which land (merge, push, record)", [b for _, b in ours]),
        ("by hand: add -A, commit, push", [a + b for a, b in theirs]),
        ("  of which add -A, commit", [a for a, _ in theirs]),
        ("  of which push", [b for _, b in theirs]),
    ]
    print(
        table(
            ["", "median ms", "min ms", "max ms"],
            [(name, ms(statistics.median(v)), ms(min(v)), ms(max(v))) for name, v in rows],
        )
    )
    print(f"\nchanges on the remote's main: {landed} (expected {2 * args.rounds})")
    verdicts = Verdicts("land_remote")
    ratio = corral_s / git_s
    verdicts.check(
        f"corral's commit and land at most {TARGET_RATIO}x by hand",
        f"{ratio:.2f}x",
        ratio <= TARGET_RATIO,
    )
    verdicts.check("every change reached the remote", str(landed), landed == 2 * args.rounds)
    return verdicts.finish()


if __name__ == "__main__":
    raise SystemExit(main())
