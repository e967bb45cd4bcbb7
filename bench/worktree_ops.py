"""Worktree create and remove on a repository of 5,000 files: corral beside bare git.

One generated repository (5,000 files of ~200 bytes in 50 folders, one commit). Each
round creates a worktree on a new branch and removes it, once through corral
(`Worktrees.plan` + `create`, then `remove`, which first checks for uncommitted work to
save) and once with bare `git worktree add -b` / `git worktree remove`, alternating which
goes first so drift in the machine's load falls on both. Targets: create and remove each
under 5 s (seed 003, NFR-003/004) and corral's median overhead on top of git under 20%.

    .venv/bin/python bench/worktree_ops.py [--files 5000] [--rounds 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Callable

from corral.git.repo import Git
from corral.git.worktrees import WorktreeConfig, Worktrees
from measure import Verdicts, banner, ms, table, temp_dir

ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "bench",
    "GIT_AUTHOR_EMAIL": "bench@localhost",
    "GIT_COMMITTER_NAME": "bench",
    "GIT_COMMITTER_EMAIL": "bench@localhost",
}
TARGET_S = 5.0
OVERHEAD_TARGET = 0.20


def git(cwd: str, *args: str) -> None:
    """Run git, failing loudly."""
    subprocess.run(["git", *args], cwd=cwd, env=ENV, check=True, capture_output=True)


def generate(root: str, files: int) -> None:
    """A repository on main with `files` small files in 50 folders, one commit."""
    os.makedirs(root)
    git(root, "init", "--quiet", "-b", "main")
    for n in range(files):
        folder = os.path.join(root, f"pkg{n % 50:02d}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"mod{n:05d}.py"), "w") as handle:
            handle.write(f'"""Module {n}."""\n\nVALUE = {n}\n' + "# padding line\n" * 10)
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "generated")


def timed(action: Callable[[], object]) -> float:
    """Seconds `action` took."""
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def one_round(trees: Worktrees, root: str, n: int, corral_first: bool) -> dict[str, float]:
    """Create and remove one worktree each way; seconds per operation."""
    bare_path = os.path.join(root, ".corral", "bare", f"b{n}")
    made: list[str] = []

    def create() -> None:  # planning (free branch and path names) is part of creating
        plan = trees.plan("bench", f"t-{n}", "main", None)
        trees.create(plan)
        made.append(plan.path)

    steps: list[tuple[str, Callable[[], object]]] = [
        ("corral_create", create),
        ("corral_remove", lambda: trees.remove(made[0])),
    ]
    bare: list[tuple[str, Callable[[], object]]] = [
        (
            "git_create",
            lambda: git(root, "worktree", "add", "--quiet", "-b", f"bare/{n}", bare_path),
        ),
        ("git_remove", lambda: git(root, "worktree", "remove", bare_path)),
    ]
    order = steps + bare if corral_first else bare + steps
    return {name: timed(action) for name, action in order}


def main() -> int:
    """Measure, print the table and the verdicts."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    banner(
        "worktree create/remove",
        f"{args.files} files, {args.rounds} rounds, corral and bare git alternating",
    )
    with temp_dir("worktrees") as tmp:
        root = os.path.join(tmp, "repo")
        generate(root, args.files)
        trees = Worktrees(Git(root), WorktreeConfig())
        rounds = [one_round(trees, root, n, n % 2 == 0) for n in range(args.rounds)]
    median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    rows = [
        (
            op,
            ms(median[f"corral_{op}"]),
            ms(median[f"git_{op}"]),
            f"{median[f'corral_{op}'] / median[f'git_{op}']:.3f}",
        )
        for op in ("create", "remove")
    ]
    print(table(["operation", "corral ms (median)", "git ms (median)", "corral / git"], rows))
    verdicts = Verdicts("worktree_ops")
    for op in ("create", "remove"):
        ours, theirs = median[f"corral_{op}"], median[f"git_{op}"]
        verdicts.check(f"{op} under {TARGET_S:g} s", f"{ms(ours)} ms", ours < TARGET_S)
        verdicts.check(
            f"{op} overhead on git under {OVERHEAD_TARGET:.0%}",
            f"{ours / theirs - 1:+.1%}",
            ours / theirs - 1 < OVERHEAD_TARGET,
        )
    return verdicts.finish()


if __name__ == "__main__":
    raise SystemExit(main())
