"""Schema commands: `db status` (version and pending migrations) and `db migrate`.

Both open the store without migrating it, so `db status` shows what is pending and
`db migrate` is the one that applies it (every other command migrates on first use).
Both run beside the database: an http:// store is bad input (exit 2), not a failing
server (exit 3).
"""

from __future__ import annotations

from corral.cli.commands import Command
from corral.cli.context import Context
from corral.foundation.errors import InvalidInput
from corral.store import is_http_url
from corral.store.urls import safe_url


def _names(migrations: list[tuple[int, str]]) -> str:
    return ", ".join(name for _, name in migrations)


def cmd_status(ctx: Context) -> int:
    """Print the schema version and the migrations not yet applied."""
    _local(ctx)
    store = ctx.store
    current, latest = store.schema_version()
    pending = store.pending_migrations()
    data = {
        "db": safe_url(ctx.db),
        "dialect": store.dialect,
        "schema_version": current,
        "latest_version": latest,
        "pending": [{"version": v, "name": name} for v, name in pending],
    }
    state = f"pending: {_names(pending)}" if pending else "up to date"
    ctx.emit(data, f"{store.dialect} store {data['db']}: schema v{current} of v{latest}, {state}")
    return 0


def cmd_migrate(ctx: Context) -> int:
    """Apply the pending migrations (once, however many processes ask at the same time)."""
    _local(ctx)
    store = ctx.store
    pending = dict(store.pending_migrations())
    applied = store.migrate()
    current, _ = store.schema_version()
    names = [pending.get(v, str(v)) for v in applied]
    ctx.emit(
        {"db": safe_url(ctx.db), "applied": names, "schema_version": current},
        f"applied {', '.join(names)}; schema v{current}"
        if names
        else f"schema v{current}: nothing to apply",
    )
    return 0


def _local(ctx: Context) -> None:
    """InvalidInput unless the store is a database here (the server's own runs `corral db`)."""
    if is_http_url(ctx.db):
        raise InvalidInput("db", "a local store: `corral db` runs on the store's host", ctx.db)


COMMANDS = (
    Command("db status", cmd_status, "schema version and pending migrations"),
    Command("db migrate", cmd_migrate, "apply pending migrations"),
)
