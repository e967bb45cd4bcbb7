"""Store-wide commands: init, reconcile."""

from __future__ import annotations

import os

from corral.cli.commands import Arg, Command
from corral.cli.context import Context


def cmd_init(ctx: Context) -> int:
    """Create (or migrate) the store, write the config file's queue limits, say where it is."""
    from corral.queues import apply_configured_limits
    from corral.store.urls import safe_url

    version, _ = ctx.store.schema_version()
    limited = apply_configured_limits(ctx.store, ctx.settings)
    applied = f"; queue limits from the config: {', '.join(limited)}" if limited else ""
    shown = safe_url(ctx.db)
    ctx.emit(
        {"db": shown, "schema_version": version, "queue_limits": limited},
        f"corral store ready at {shown} (schema v{version}){applied}",
    )
    return 0


def cmd_reconcile(ctx: Context) -> int:
    """One reconcile pass; prints what it found and fixed."""
    from corral import reconcile
    from corral.cli.worktree_cmds import prune
    from corral.git.prune import prune_if_managed

    report = reconcile.reconcile_once(ctx.store, settings=ctx.settings)
    counts = report.to_dict()
    from corral.runtime.worker.tmp import prune_tmp

    # After the pass: tasks of dead workers no longer hold worktrees.
    pruned = (
        prune(ctx)
        if ctx.args.repo
        else prune_if_managed(ctx.store, os.getcwd(), ctx.settings.worktree)
    )
    if pruned is not None:
        counts["worktrees_removed"] = len(pruned.removed)
    counts["tmp_dirs_removed"] = len(prune_tmp(ctx.db))
    found = ", ".join(f"{name.replace('_', ' ')}: {n}" for name, n in counts.items() if n)
    ctx.emit(counts, f"reconcile: {found}" if found else "reconcile: nothing to repair")
    return 0


COMMANDS = (
    Command("init", cmd_init, "create the store (.corral/corral.db by default)"),
    Command(
        "reconcile",
        cmd_reconcile,
        "one reconcile pass",
        Arg(
            "--repo",
            metavar="DIR",
            help="also prune orphaned worktrees there (default: here, if any)",
        ),
    ),
)
