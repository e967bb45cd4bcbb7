"""Branch commands: `land` a kept branch, list every task `branches` and where its work is."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from corral.cli import render
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.cli.review_cmds import REPO, strategy_of
from corral.model.actors import OPERATOR
from corral.usecases import landings

if TYPE_CHECKING:
    from corral.usecases.landings import LandingBranches


def _repo(ctx: Context) -> LandingBranches:
    from corral.git import merging, worktrees  # only these commands need git

    path = ctx.args.repo or os.getcwd()
    return merging.GitBranches(worktrees.Worktrees.open(path, ctx.settings.worktree))


def cmd_land(ctx: Context) -> int:
    """Land the kept branch of a done task on its base; exit 1 on a conflict (then ready)."""
    landed = landings.land_kept(
        ctx.store, ctx.args.id, repo=_repo(ctx), strategy=strategy_of(ctx), actor=OPERATOR
    )
    task = landed.task
    if landed.conflicts:
        ctx.emit(landed.to_dict(), "")
        sys.stderr.write(
            f"corral: error: land conflict in {', '.join(landed.conflicts)}: "
            f"task {task.id} is ready again on branch {task.branch}\n"
        )
        return 1
    commit = (landed.merged_commit or "")[:12]
    ctx.emit(landed.to_dict(), f"{task.id}: {task.branch} landed as {commit}")
    return 0


def cmd_branches(ctx: Context) -> int:
    """Every branch corral made for a task: landed, working, in review, kept or abandoned."""
    states = landings.branch_states(ctx.store, _repo(ctx))
    rows = [
        (s.task.id, str(s.where), s.state or "-", (s.sha or "-")[:12], s.branch, s.task.title)
        for s in states
    ]
    columns = ("TASK", "WHERE", "STATE", "SHA", "BRANCH", "TITLE")
    human = render.table(columns, rows) if rows else ""
    ctx.emit([s.to_dict() for s in states], human or "no task branches")
    return 0


COMMANDS = (
    Command(
        "land",
        cmd_land,
        "land a done task's kept branch on its base",
        Arg("id"),
        REPO,
        Arg("--strategy", help="ff, merge or squash (default worktree.merge_strategy)"),
    ),
    Command("branches", cmd_branches, "every task branch and where its work is", REPO),
)
