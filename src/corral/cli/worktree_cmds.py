"""Worktree commands: worktree list [--backups] | prune."""

from __future__ import annotations

import os
from typing import Any

from corral.cli import render
from corral.cli.commands import Arg, Command
from corral.cli.context import Context


def open_trees(ctx: Context) -> Any:
    """corral's worktrees of the repository at `--repo` (default: here)."""
    from corral.runtime.worktrees import Worktrees

    return Worktrees.open(ctx.args.repo or os.getcwd(), ctx.settings.worktree)


def cmd_list(ctx: Context) -> int:
    """The worktrees corral manages (and, with --backups, its backup refs)."""
    trees = open_trees(ctx)
    listed = trees.trees()
    data: dict[str, Any] = {"worktrees": [t.to_dict() for t in listed]}
    rows = [(t.path, t.branch or "(detached)", (t.head or "")[:12]) for t in listed]
    human = [render.table(("PATH", "BRANCH", "HEAD"), rows) if rows else "no worktrees"]
    if ctx.args.backups:
        backups = trees.backups()
        data["backups"] = [{"ref": ref, "commit": commit} for ref, commit in backups]
        lines = [f"{ref} {commit[:12]}" for ref, commit in backups]
        human.append("\n".join(lines) if lines else "no backups")
    ctx.emit(data, "\n".join(human))
    return 0


def cmd_prune(ctx: Context) -> int:
    """Remove worktrees no live claim or review needs; `git worktree prune`."""
    report = prune(ctx)
    gone = ", ".join(report.removed) or "nothing"
    ctx.emit(report.to_dict(), f"removed: {gone}")
    return 0


def prune(ctx: Context) -> Any:
    """One prune pass in the repository at `--repo` (default: here)."""
    from corral.runtime.worktree_prune import prune_orphans

    trees = open_trees(ctx)
    base = ctx.settings.worktree.base or trees.checked_out()
    return prune_orphans(ctx.store, trees, base_ref=base)


def prune_if_managed(ctx: Context) -> Any:
    """A prune pass for `corral reconcile`: in `--repo`, else here when this is a git
    repository with corral worktrees; None when there is nothing to look at."""
    from corral.runtime.git import GitUnavailable

    if ctx.args.repo:
        return prune(ctx)
    root = _repository_above(os.getcwd())
    if root is None or not os.path.isdir(os.path.join(root, ctx.settings.worktree.dir)):
        return None  # no corral worktrees here: git is not even started
    try:
        return prune(ctx)
    except GitUnavailable:
        return None


def _repository_above(folder: str) -> str | None:
    """The nearest folder from `folder` upwards that holds a `.git`, as git finds it."""
    here = os.path.abspath(folder)
    while not os.path.exists(os.path.join(here, ".git")):
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent
    return here


REPO = Arg("--repo", metavar="DIR", help="the git repository (default: here)")

COMMANDS = (
    Command(
        "worktree list",
        cmd_list,
        "worktrees corral manages",
        REPO,
        Arg("--backups", action="store_true", help="and the backup refs"),
    ),
    Command("worktree prune", cmd_prune, "remove orphaned worktrees", REPO),
)
