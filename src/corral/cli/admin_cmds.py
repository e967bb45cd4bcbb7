"""Store-wide commands: init, reconcile."""

from __future__ import annotations

import sys

from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.git.ignore import exclude_state_dir
from corral.git.repo import GitFailed
from corral.queues import apply_configured_limits
from corral.store.location import state_dir
from corral.store.urls import safe_url
from corral.usage import apply_configured_providers


def cmd_init(ctx: Context) -> int:
    """Create (or migrate) the store, write the config file's queue limits, keep `.corral/`
    out of git (corral.git.ignore), say where it is."""
    version, _ = ctx.store.schema_version()
    limited = apply_configured_limits(ctx.store, ctx.settings)
    capped = apply_configured_providers(ctx.store, ctx.settings)
    applied = f"; queue limits from the config: {', '.join(limited)}" if limited else ""
    applied += f"; provider caps from the config: {', '.join(capped)}" if capped else ""
    try:
        excluded = exclude_state_dir(state_dir(ctx.db))
    except GitFailed as exc:  # the store is ready all the same: say so, and what failed
        sys.stderr.write(f"corral: warning: {exc.message}\n")
        excluded = None
    hidden = f"; .corral/ excluded from git in {excluded}" if excluded else ""
    shown = safe_url(ctx.db)
    ctx.emit(
        {"db": shown, "schema_version": version, "queue_limits": limited, "git_exclude": excluded},
        f"corral store ready at {shown} (schema v{version}){applied}{hidden}",
    )
    return 0


def cmd_reconcile(ctx: Context) -> int:
    """One reconcile pass, then this host's clean-up; prints what it found and fixed."""
    from corral.runtime.pool import cleanup  # noqa: PLC0415 - runtime and git: not for init

    report = cleanup.reconcile_and_clean_up(
        ctx.store, db=ctx.db, settings=ctx.settings, repo=ctx.args.repo
    )
    counts = report.to_dict()
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
