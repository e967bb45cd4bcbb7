"""Ten approved tasks editing one file land in sequence on a remote's main, with no
person's step after the approvals, beside ten `git merge` + `git push` by hand.

One generated repository (5,000 files of ~200 bytes in 50 folders, plus `queue.txt` of 40
lines), cloned bare twice (corral's remote and the hand's, so neither side's pushes move
the other's main) and once from each (corral's host, with `[worktree] remote = origin` and
`merge_approved`; the hand's clone). Each round, untimed: ten tasks run in their worktrees
on corral's host, each changing its own line of `queue.txt` (committed, pushed for review
as the runner does), and are approved; the hand makes ten branches from main, each changing
its own line. Timed, in alternating order:

- corral: from the last approval to the last task landed: one `merge_approved` pass (what
  the reconcile pass runs): for each task, oldest approval first, the review flow's merge
  (the pinned commit checked, `git merge-tree`, `git commit-tree`, `git push` of the base,
  the task done in the store); after the last, the tasks' worktrees and branches removed
  (here and on the remote), reported apart.
- git: for each branch, `git merge --no-ff --no-edit` in the clone, then `git push`.

No target: the issue asks for the figures side by side.

    .venv/bin/python bench/land_queue.py [--files 5000] [--rounds 5] [--tasks 10]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import time
from typing import Any

import corral
from corral.foundation.settings import Settings
from corral.git import merge_queue
from corral.git.merging import GitBranches
from corral.git.repo import Git
from corral.git.task_worktrees import TaskWorktrees
from corral.git.worktrees import WorktreeConfig, Worktrees
from corral.model.tasks import NewTask
from corral.usecases import reviews
from measure import Verdicts, banner, ms, new_store, register_worker, table, temp_dir
from worktree_ops import ENV, generate, git

SETTINGS = Settings(worktree_remote="origin", worktree_merge_approved=True)
LINES = 40


def _edit_line(path: str, line: int, text: str) -> None:
    """Change line `line` of queue.txt in `path` to `text`, and commit it."""
    name = os.path.join(path, "queue.txt")
    with open(name, encoding="utf-8") as handle:
        lines = handle.read().splitlines(keepends=True)
    lines[line] = text + "\n"
    with open(name, "w", encoding="utf-8") as handle:
        handle.writelines(lines)
    git(path, "commit", "--quiet", "-am", f"line {line}")


def corral_round(
    store: corral.Store, tasks: TaskWorktrees, trees: Worktrees, worker_id: str, *, r: int, n: int
) -> tuple[float, float]:
    """Ten tasks to approved, untimed; then the pass that lands them, timed: (seconds to
    the last task done, seconds to the pass's end, its clean-up of the worktrees done)."""
    log = logging.getLogger("corral.bench.land_queue")
    ids = []
    for k in range(n):
        task = corral.enqueue(store, NewTask(title=f"r{r} t{k}", requires_review=True))
        claim = corral.claim(store, task.id, worker_id)
        entered = tasks.enter(store.tasks.get_task(task.id), claim.token, worker_id)
        _edit_line(entered.path, (k * 4) % LINES, f"corral r{r} t{k}")
        head = tasks.final_commit(task.id)
        assert tasks.land(store.tasks.get_task(task.id), claim.token, head).error is None
        corral.complete(store, task.id, token=claim.token)
        tasks.leave(task.id, claim.token)
        ids.append(task.id)
    for task_id in ids:
        reviews.approve(store, task_id, branches=lambda: GitBranches(trees))
    done_at: list[float] = []
    merge = reviews.merge

    def timed_merge(*args: Any, **kwargs: Any) -> reviews.MergeResult:
        result = merge(*args, **kwargs)
        done_at.append(time.perf_counter())  # this task is done: its change on the main
        return result

    # The pass calls corral.usecases.reviews.merge for each task: the moment each returns is
    # its land.
    reviews.merge = timed_merge
    start = time.perf_counter()
    try:
        landed = merge_queue.merge_approved(store, SETTINGS.worktree, repo=trees.root, log=log)
    finally:
        reviews.merge = merge
    ended = time.perf_counter()
    assert landed == tuple(ids), landed
    return done_at[-1] - start, ended - start


def hand_round(clone: str, r: int, n: int) -> float:
    """Ten branches from main, untimed; then merge and push each, timed."""
    for k in range(n):
        git(clone, "checkout", "--quiet", "-b", f"r{r}/t{k}", "main")
        _edit_line(clone, (k * 4 + 2) % LINES, f"hand r{r} t{k}")
    git(clone, "checkout", "--quiet", "main")
    start = time.perf_counter()
    for k in range(n):
        git(clone, "merge", "--quiet", "--no-ff", "--no-edit", f"r{r}/t{k}")
        git(clone, "push", "--quiet", "origin", "main")
    return time.perf_counter() - start


def main() -> int:
    """Measure, print the table and the check that every change landed."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tasks", type=int, default=10)
    args = parser.parse_args()
    banner(
        "land_queue",
        f"{args.files} files, {args.rounds} rounds of {args.tasks} approved tasks, alternating",
    )
    os.environ.update({k: v for k, v in ENV.items() if k.startswith("GIT_")})
    with temp_dir("land_queue") as tmp:
        seed = os.path.join(tmp, "seed")
        generate(seed, args.files)
        with open(os.path.join(seed, "queue.txt"), "w", encoding="utf-8") as handle:
            handle.writelines(f"line {n}\n" for n in range(LINES))
        git(seed, "add", "queue.txt")
        git(seed, "commit", "--quiet", "-m", "queue")
        clones = {}
        for side in ("corral", "hand"):
            bare = os.path.join(tmp, f"{side}.git")
            git(tmp, "clone", "--quiet", "--bare", seed, bare)
            clones[side] = os.path.join(tmp, side)
            git(tmp, "clone", "--quiet", bare, clones[side])
            git(clones[side], "config", "core.untrackedCache", "true")
        store = new_store(os.path.join(tmp, "corral.db"))
        worker_id = register_worker(store, "bench")
        quiet = logging.getLogger("corral.bench.land_queue")
        quiet.setLevel(logging.WARNING)
        trees = Worktrees(Git(clones["corral"]), WorktreeConfig(remote="origin"))
        tasks = TaskWorktrees(
            store, trees, worker_name="bench", base_ref="main", policy=SETTINGS.worktree, log=quiet
        )
        ours: list[tuple[float, float]] = []
        theirs: list[float] = []
        for r in range(args.rounds):
            if r % 2 == 0:
                ours.append(corral_round(store, tasks, trees, worker_id, r=r, n=args.tasks))
                theirs.append(hand_round(clones["hand"], r, args.tasks))
            else:
                theirs.append(hand_round(clones["hand"], r, args.tasks))
                ours.append(corral_round(store, tasks, trees, worker_id, r=r, n=args.tasks))
        merges = {
            side: int(
                Git(os.path.join(tmp, f"{side}.git")).out("rev-list", "--count", "--merges", "main")
            )
            for side in ("corral", "hand")
        }
        store.close()
    rows = [
        ("corral: last approval to last land", [a for a, _ in ours]),
        ("corral: ... to the pass's end (clean-up)", [b for _, b in ours]),
        ("by hand: ten git merge + git push", theirs),
    ]
    print(
        table(
            ["", "median ms", "min ms", "max ms", "per task ms"],
            [
                (
                    name,
                    ms(statistics.median(v)),
                    ms(min(v)),
                    ms(max(v)),
                    ms(statistics.median(v) / args.tasks),
                )
                for name, v in rows
            ],
        )
    )
    ratio = statistics.median(a for a, _ in ours) / statistics.median(theirs)
    print(f"\ncorral / by hand: {ratio:.2f}x; merge commits on the remotes' main: {merges}")
    verdicts = Verdicts("land_queue")
    expected = args.rounds * args.tasks
    verdicts.check(
        "every approved task landed, no person's step",
        str(merges["corral"]),
        merges["corral"] == expected,
    )
    return verdicts.finish()


if __name__ == "__main__":
    raise SystemExit(main())
