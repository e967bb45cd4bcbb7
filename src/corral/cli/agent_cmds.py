"""`corral agent list`: the agent profiles a worker can run here, and whether it can.

Each profile (built in, or the user's `.corral/agents/NAME.toml`): its command, where its
program is on PATH (or that it is missing), the version the program reports (its profile's
`version_command`, bounded to VERSION_TIMEOUT_S), the version its format was written
against, its provider account and whether it can resume a session. A profile file that is
not valid is listed with its error instead of failing the listing.
"""

from __future__ import annotations

from corral.cli.commands import Command
from corral.cli.context import Context
from corral.cli.render import table
from corral.usecases.agents import GENERIC, ProfileSeen, agent_profiles, agents_dir


def cmd_agent_list(ctx: Context) -> int:
    """Every profile, and whether its program is here."""
    found = agent_profiles(agents_dir(ctx.db))
    ctx.emit(
        [f.to_dict() for f in found],
        table(
            ("AGENT", "SOURCE", "PROVIDER", "RESUME", "PROGRAM", "VERSION"),
            [
                (
                    f.name,
                    f.source,
                    f.provider or "-",
                    "yes" if f.can_resume else "no",
                    _program(f),
                    f"invalid: {f.error}" if f.error is not None else f.version or "-",
                )
                for f in found
            ],
        ),
    )
    return 0


def _program(seen: ProfileSeen) -> str:
    """Where its program is, or why there is none to show."""
    if seen.error is not None:
        return "-"
    if seen.name == GENERIC:
        return "(your --exec)"
    return seen.program or f"missing: {seen.command.split(' ', 1)[0]} is not on PATH"


COMMANDS = (Command("agent list", cmd_agent_list, "agent profiles: programs found, versions"),)
