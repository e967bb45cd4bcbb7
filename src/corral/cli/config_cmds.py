"""`corral config show`: the settings in force and where each one came from."""

from __future__ import annotations

from typing import Any

from corral.cli.commands import Command
from corral.cli.context import Context


def _shown(row: dict[str, Any]) -> str:
    """A row's value as people read it: seconds with their unit, lists comma-separated,
    flags as in the file (true, false)."""
    value = row["value"]
    if isinstance(value, list):
        return ", ".join(value) if value else "(none)"
    if value == "" or value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = f"{value:g}" if isinstance(value, float) else str(value)
    return f"{text} {row['unit']}" if row["unit"] in ("s", "per minute") else text


def cmd_config_show(ctx: Context) -> int:
    """Every setting: its place in config.toml, value, unit and source; then queue limits."""
    rows = ctx.settings.rows()
    width = max(len(row["key"]) for row in rows)
    lines = [f"{row['key']:<{width}}  {_shown(row)}  [{row['source']}]" for row in rows]
    ctx.emit(rows, "\n".join(lines))
    return 0


COMMANDS = (
    Command("config show", cmd_config_show, "every setting, its value and where it came from"),
)
