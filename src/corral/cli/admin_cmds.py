"""Store-wide commands: init, reconcile (the maintenance pass, once)."""

from __future__ import annotations

import sys

from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.git.ignore import exclude_state_dir
from corral.git.repo import GitFailed
from corral.store.location import state_dir
from corral.store.urls import safe_url
from corral.usecases.queues import apply_configured_limits
from corral.usecases.usage import apply_configured_providers


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
    """One maintenance pass, every part of it (corral.runtime.maintenance); prints what it
    did, and on stderr any part that failed (its error's exit code then, the other parts
    done)."""
    from corral.foundation.clock import SystemClock  # reconcile alone
    from corral.foundation.logs import logger  # reconcile alone
    from corral.git.worktrees import Worktrees  # reconcile alone
    from corral.runtime import maintenance  # runtime and git: not for init

    if ctx.args.repo is not None:  # a named repository that is none: refused before the pass
        Worktrees.open(ctx.args.repo, ctx.settings.worktree)
    report = maintenance.run_once(
        ctx.store,
        settings=ctx.settings,
        place=maintenance.Place(db=ctx.db, repo=ctx.args.repo),
        clock=SystemClock(),
        log=logger("corral.usecases.reconcile"),
        actor="reconcile",
    )
    done = [f"{name.replace('_', ' ')}: {n}" for name, n in report.counts().items() if n]
    text = f"reconcile: {', '.join(done)}" if done else "reconcile: nothing to repair"
    ctx.emit(report.to_dict(), text)
    for failure in report.failures:
        sys.stderr.write(f"corral: error: {failure}\n")
    return max((f.exit_code for f in report.failures), default=0)


REPO = Arg(
    "--repo", metavar="DIR", help="also prune orphaned worktrees there (default: here, if any)"
)

COMMANDS = (
    Command("init", cmd_init, "create the store (.corral/corral.db by default)"),
    Command(
        "reconcile",
        cmd_reconcile,
        "one maintenance pass: repair, schedules, this host's clean-up, retention",
        REPO,
    ),
)
