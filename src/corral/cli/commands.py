"""Commands as data: each command module lists its `Command`s in a `COMMANDS` table.

Two parsers read the same table. `fast_parse` handles the plain forms a bash loop types
(`worker heartbeat ID`, `claim ID WORKER --json`) without importing argparse, which with
its parsers costs about 3 ms of every command's start-up; `argtree` builds argparse from
the table for help, for every other form and for every usage error. A command is declared
once, so the two cannot drift apart (tests/unit/test_fast_parse.py compares them).

`COMMAND_TABLE` names, for every command, the module that declares it and its summary: a
command imports only its own module, and help lists commands without importing any.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import argparse

    from corral.cli.context import Context

# Every command: its words -> the module that declares it (only that module is imported to
# run it) and its one-line summary. `corral --help` and `corral GROUP --help` list these
# summaries without importing a command module; each repeats its module's `Command.help`,
# and tests/unit/test_commands.py keeps the two, and their order, the same.
COMMAND_TABLE: dict[str, tuple[str, str]] = {
    "init": ("admin_cmds", "create the store (.corral/corral.db by default)"),
    "reconcile": (
        "admin_cmds",
        "one maintenance pass: repair, schedules, this host's clean-up, retention",
    ),
    "add": ("task_cmds", "enqueue a task (prints its id)"),
    "ready": ("task_cmds", "tasks claimable now, in claim order"),
    "list": ("task_cmds", "list tasks"),
    "show": ("task_cmds", "show a task"),
    "retry": ("task_cmds", "return a failed, cancelled or waiting task to the queue"),
    "answer": ("task_cmds", "answer a waiting task: back to ready, its next run told TEXT"),
    "why": ("task_cmds", "why is this task not running?"),
    "cancel": ("task_cmds", "cancel a task"),
    "events": ("task_cmds", "the audit trail, newest last"),
    "claim": ("claim_cmds", "claim a task for a worker (prints the lease)"),
    "claim:next": ("claim_cmds", "pick and claim the next task, atomically"),
    "claim:renew": ("claim_cmds", "extend a lease"),
    "claim:release": (
        "claim_cmds",
        "give a task back to the queue (the attempt counts unless --no-attempt)",
    ),
    "defer": ("claim_cmds", "give a task back until later, the attempt not counted"),
    "done": ("claim_cmds", "report success"),
    "fail": ("claim_cmds", "report failure"),
    "runs": ("run_cmds", "list runs (attempts at tasks), newest first"),
    "run show": ("run_cmds", "show a run in full"),
    "logs": ("run_cmds", "print a run's transcript or stderr"),
    "worker register": ("worker_cmds", "register a worker (prints its id)"),
    "worker heartbeat": ("worker_cmds", "prove the worker lives; answers interval and drain"),
    "worker deregister": ("worker_cmds", "take a worker offline"),
    "worker drain": ("worker_cmds", "stop giving a worker new claims"),
    "worker start": ("worker_cmds", "run a worker here until stopped"),
    "worker stop": ("worker_cmds", "stop a worker's runner (now, or --graceful)"),
    "worker logs": ("worker_cmds", "a pool worker's log (id or slot name)"),
    "worker attach": ("worker_cmds", "follow a worker's live output, run after run"),
    "worker list": ("worker_cmds", "list workers"),
    "worker show": ("worker_cmds", "one worker in full, with its figures"),
    "worker status": ("worker_cmds", "one worker, or every one not offline"),
    "config show": ("config_cmds", "every setting, its value and where it came from"),
    "queue list": ("queue_cmds", "depth, running, limits and what is held back"),
    "queue set": ("queue_cmds", "change a queue's limits"),
    "usage": ("usage_cmds", "tokens, cost and wall time of agents' runs, summed"),
    "provider list": ("usage_cmds", "provider accounts: caps, parks, running agents"),
    "provider set": ("usage_cmds", "cap, pause or resume a provider account (every host)"),
    "agent list": ("agent_cmds", "agent profiles: programs found, versions"),
    "token create": ("token_cmds", "make an API token for corral serve (printed once)"),
    "token list": ("token_cmds", "the API tokens: names, roles, expiry"),
    "token revoke": ("token_cmds", "revoke an API token"),
    "serve": ("serve_cmds", "serve the HTTP API on this store"),
    "mcp": ("mcp_cmds", "serve MCP on stdio: the queue's tools for an agent"),
    "submit": ("review_cmds", "hand a running task in for review"),
    "review list": ("review_cmds", "tasks in review or approved"),
    "review show": ("review_cmds", "one review, with the diff stat"),
    "approve": ("review_cmds", "approve at the branch's head"),
    "request-changes": ("review_cmds", "back to ready on its branch, with a note"),
    "merge": ("review_cmds", "merge an approved task's branch"),
    "land": ("branch_cmds", "land a done task's kept branch on its base"),
    "branches": ("branch_cmds", "every task branch and where its work is"),
    "worktree list": ("worktree_cmds", "worktrees corral manages"),
    "worktree prune": ("worktree_cmds", "remove orphaned worktrees"),
    "msg send": ("msg_cmds", "append a message to an inbox"),
    "msg inbox": ("msg_cmds", "read an inbox in order"),
    "msg ack": ("msg_cmds", "acknowledge a message"),
    "msg export": ("msg_cmds", "every message as JSON lines"),
    "orchestrator start": ("orchestrator_cmds", "run the orchestrator until stopped"),
    "orchestrator status": ("orchestrator_cmds", "the orchestrator and its pool"),
    "orchestrator stop": ("orchestrator_cmds", "stop the orchestrator and its workers"),
    "orchestrator reconcile": ("orchestrator_cmds", "the same pass as `corral reconcile`"),
    "status": ("orchestrator_cmds", "one screen: orchestrator, pool, workers, queues, tasks"),
    "db status": ("db_cmds", "schema version and pending migrations"),
    "db migrate": ("db_cmds", "apply pending migrations"),
    "doctor": ("doctor_cmds", "check this machine for what corral needs"),
    "prune": ("prune_cmds", "delete finished tasks, events and gone workers older than given"),
    "schedule add": ("schedule_cmds", "add a cron schedule that creates a task at each fire"),
    "schedule list": ("schedule_cmds", "schedules, their next fires and last task"),
    "schedule show": ("schedule_cmds", "a schedule and its fires"),
    "schedule preview": ("schedule_cmds", "fire times and keys that would be made; writes nothing"),
    "schedule pause": ("schedule_cmds", "stop firing until resumed"),
    "schedule resume": ("schedule_cmds", "fire again"),
    "schedule trigger": ("schedule_cmds", "one fire now, outside the cron"),
    "schedule backfill": ("schedule_cmds", "every fire time in (from, to], each once"),
    "schedule remove": ("schedule_cmds", "delete a schedule (its tasks stay)"),
    "namespace list": ("namespace_cmds", "every namespace: tasks by status, live workers"),
}
# First command word -> the module that declares it.
COMMAND_MODULES = {words.split()[0]: module for words, (module, _) in COMMAND_TABLE.items()}
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
    """Every command, as its module declares it, in the order of the command table (this
    imports every command module: tests compare the two)."""
    return [c for m in dict.fromkeys(COMMAND_MODULES.values()) for c in module_commands(m)]


def find_command(words: list[str]) -> Command | None:
    """The command named by the first one or two words of the command line, if any (its
    module is imported only when the table names such a command)."""
    wanted = words[:2] if words and words[0] in GROUPS else words[:1]
    entry = COMMAND_TABLE.get(" ".join(wanted))
    if entry is None:
        return None
    return next(c for c in module_commands(entry[0]) if c.words == tuple(wanted))


def command_words(argv: list[str]) -> list[str]:
    """The first two positional words of `argv`, skipping `--db VALUE` and `--namespace VALUE`
    (and their abbreviations, `--name VALUE`, which argparse reads as `--namespace VALUE`)."""
    words: list[str] = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
        elif _takes_value(arg):
            skip = True
        elif not arg.startswith("-"):
            words.append(arg)
            if len(words) == 2:
                break
    return words


def _takes_value(arg: str) -> bool:
    """Whether `arg` is `--db` or `--namespace`, whole or abbreviated, with its value next."""
    return len(arg) > 2 and ("--db".startswith(arg) or "--namespace".startswith(arg))
