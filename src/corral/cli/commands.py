"""Commands as data: each command module lists its `Command`s in a `COMMANDS` table.

Two parsers read the same table. `fast_parse` handles the plain forms a bash loop types
(`worker heartbeat ID`, `claim ID WORKER --json`) without importing argparse, which with
its parsers costs about 3 ms of every command's start-up; `argtree` builds argparse from
the table for help, for every other form and for every usage error. A command is declared
once, so the two cannot drift apart (tests/unit/test_fast_parse.py compares them).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from corral.cli.context import Context

# First command word -> the module that declares it. Only that module is imported.
COMMAND_MODULES = {
    "init": "admin_cmds",
    "reconcile": "admin_cmds",
    "add": "task_cmds",
    "ready": "task_cmds",
    "list": "task_cmds",
    "show": "task_cmds",
    "retry": "task_cmds",
    "answer": "task_cmds",
    "why": "task_cmds",
    "cancel": "task_cmds",
    "events": "task_cmds",
    "claim": "claim_cmds",
    "claim:next": "claim_cmds",
    "claim:renew": "claim_cmds",
    "claim:release": "claim_cmds",
    "defer": "claim_cmds",
    "done": "claim_cmds",
    "fail": "claim_cmds",
    "runs": "run_cmds",
    "run": "run_cmds",
    "logs": "run_cmds",
    "worker": "worker_cmds",
    "config": "config_cmds",
    "queue": "queue_cmds",
    "usage": "usage_cmds",
    "agent": "agent_cmds",
    "token": "token_cmds",
    "serve": "serve_cmds",
    "provider": "usage_cmds",
    "submit": "review_cmds",
    "review": "review_cmds",
    "approve": "review_cmds",
    "request-changes": "review_cmds",
    "merge": "review_cmds",
    "land": "branch_cmds",
    "branches": "branch_cmds",
    "worktree": "worktree_cmds",
    "msg": "msg_cmds",
    "orchestrator": "orchestrator_cmds",
    "status": "orchestrator_cmds",
    "db": "db_cmds",
    "doctor": "doctor_cmds",
    "prune": "prune_cmds",
    "schedule": "schedule_cmds",
    "namespace": "namespace_cmds",
}
# Command groups (`corral worker register`) -> their help line.
GROUPS = {
    "worker": "the worker registry",
    "run": "one run",
    "config": "the settings in force",
    "queue": "queue depth and backpressure limits",
    "provider": "provider accounts agents spend",
    "agent": "agent profiles",
    "token": "API tokens for corral serve",
    "review": "tasks in review",
    "worktree": "task worktrees",
    "msg": "worker and orchestrator inboxes",
    "orchestrator": "the pool and its reconciler",
    "db": "the store's schema: status, migrate",
    "namespace": "the namespaces one store serves",
    "schedule": "cron schedules that create tasks",
}


class Arg:
    """One `add_argument` call, kept as data: flags or a positional name, and options."""

    __slots__ = ("flags", "options")

    def __init__(self, *flags: str, **options: Any) -> None:
        self.flags = flags
        self.options = options

    @property
    def dest(self) -> str:
        """The attribute it sets, named as argparse names it."""
        if "dest" in self.options:
            return str(self.options["dest"])
        if self.positional:
            return self.flags[0]
        long = next((f for f in self.flags if f.startswith("--")), self.flags[0])
        return long.lstrip("-").replace("-", "_")

    @property
    def positional(self) -> bool:
        """A positional argument rather than an option."""
        return not self.flags[0].startswith("-")


def status_filter(statuses: Sequence[str]) -> Arg:
    """`--status S ...`: keep what is in any of `statuses` (several at once, or repeated)."""
    return Arg(
        "--status", action="extend", nargs="+", metavar="S", help=f"any of: {', '.join(statuses)}"
    )


class Command:
    """One command: its words (`worker heartbeat`), handler, help line and arguments.

    `customize` adds what the table cannot say (a mutually exclusive group); a command with
    one is always parsed by argparse.
    """

    __slots__ = ("args", "customize", "handler", "help", "words")

    def __init__(
        self,
        words: str,
        handler: Callable[[Context], int],
        help: str,
        *args: Arg,
        customize: Callable[[argparse.ArgumentParser], None] | None = None,
    ) -> None:
        self.words = tuple(words.split())
        self.handler = handler
        self.help = help
        self.args = args
        self.customize = customize


def module_commands(module: str) -> tuple[Command, ...]:
    """The `COMMANDS` table of `corral.cli.<module>`."""
    table: tuple[Command, ...] = import_module(f"corral.cli.{module}").COMMANDS
    return table


def all_commands() -> list[Command]:
    """Every command, in the order `corral --help` lists them (this imports every module)."""
    return [c for m in dict.fromkeys(COMMAND_MODULES.values()) for c in module_commands(m)]


def find_command(words: list[str]) -> Command | None:
    """The command named by the first one or two words of the command line, if any."""
    module = COMMAND_MODULES.get(words[0]) if words else None
    if module is None:
        return None
    wanted = tuple(words[:2]) if words[0] in GROUPS else words[:1]
    for command in module_commands(module):
        if command.words == tuple(wanted):
            return command
    return None


def command_words(argv: list[str]) -> list[str]:
    """The first two positional words of `argv`, skipping `--db VALUE` and `--namespace VALUE`."""
    words: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif arg in ("--db", "--namespace"):
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
            if len(words) == 2:
                break
    return words
