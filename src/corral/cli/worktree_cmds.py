"""Worktree commands: worktree list [--backups] | prune."""

from __future__ import annotations

import os
from typing import Any

from corral.cli import render
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.git.prune import prune_in
from corral.git.worktrees import Worktrees


def cmd_list(ctx: Context) -> int:
    """The worktrees corral manages (and, with --backups, its backup refs)."""
    trees = Worktrees.open(ctx.args.repo or os.getcwd(), ctx.settings.worktree)
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
    report = prune_in(ctx.store, ctx.args.repo or os.getcwd(), ctx.settings.worktree)
    gone = ", ".join(report.removed) or "nothing"
    ctx.emit(report.to_dict(), f"removed: {gone}")
    return 0


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
