"""Store-wide commands: init, reconcile."""

from __future__ import annotations

import argparse

from corral.cli.context import Context


def cmd_init(ctx: Context) -> int:
    """Create (or migrate) the store, write the config file's queue limits, say where it is."""
    from corral.queue_limits import apply_configured_limits
    from corral.store.pg_errors import safe_url

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
    from corral import reconciler

    report = reconciler.reconcile_once(ctx.store, settings=ctx.settings)
    counts = report.to_dict()
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
    p.set_defaults(handler=cmd_reconcile)
