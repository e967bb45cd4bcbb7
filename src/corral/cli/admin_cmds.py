"""Store-wide commands: init, reconcile."""

from __future__ import annotations

import argparse

from corral.cli.context import Context


def cmd_init(ctx: Context) -> int:
    """Create (or migrate) the store and say where it is."""
    version, _ = ctx.store.schema_version()
    ctx.emit(
        {"db": ctx.db, "schema_version": version},
        f"corral store ready at {ctx.db} (schema v{version})",
    )
    return 0


def cmd_reconcile(ctx: Context) -> int:
    """One reconcile pass; prints what it found and fixed."""
    from corral import reconciler
    from corral.cli.worktree_cmds import prune_if_managed

    report = reconciler.reconcile_once(ctx.store, settings=ctx.settings)
    counts = report.to_dict()
    from corral.runtime.worker_tmp import prune_tmp

    pruned = prune_if_managed(ctx)  # after: tasks of dead workers no longer hold worktrees
    if pruned is not None:
        counts["worktrees_removed"] = len(pruned.removed)
    counts["tmp_dirs_removed"] = len(prune_tmp(ctx.db))
    found = ", ".join(f"{name.replace('_', ' ')}: {n}" for name, n in counts.items() if n)
    ctx.emit(counts, f"reconcile: {found}" if found else "reconcile: nothing to repair")
    return 0


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add the store-wide commands to the parser."""
    p = sub.add_parser(
        "init", parents=[common], help="create the store (.corral/corral.db by default)"
    )
    p.set_defaults(handler=cmd_init)
    p = sub.add_parser("reconcile", parents=[common], help="one reconcile pass")
    p.add_argument(
        "--repo", metavar="DIR", help="also prune orphaned worktrees there (default: here, if any)"
    )
    p.set_defaults(handler=cmd_reconcile)
