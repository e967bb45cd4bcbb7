"""The options a worker runs with, declared once for `worker start` and the pool.

Each row is one option: its field in `policies.WorkerOptions`, its key under `[pool]` in
config.toml (the setting `pool_<field>`, variable `CORRAL_POOL_<FIELD>`), its flag on both
`worker start` and `orchestrator start`, its unit, default, minimum and help. From this
table come the settings' `pool.*` rows (settings.SPEC), both commands' flags
(cli/worker_flags.py) and each pool slot's command line (runtime/pool/worker_process.py),
so the names, defaults and bounds cannot drift apart. What needs the file system or git
to check (an exec on PATH, a workdir, a branch template) is checked by
runtime/worker/preflight.py, for both commands.

Units: `s` seconds (a duration), `count` a whole number, `text`, `list` (a repeatable
flag), `flag` (true or false; a flag without a value). A minimum of 0.001 s means
"greater than zero" (1ms is the shortest duration one can write). A default of None
means "not set": the runner's own default applies (the task's timeout, `lease_s` ...).

Apart, in `START`, because a pool decides them for its slots and so they have no `[pool]`
key: `--name` (slots are `slot-N`), `--once` (a slot that exits after one task would be
restarted at once: that is `--max-tasks 1`) and `--shutdown-timeout` (the orchestrator
stops its workers itself). They are the rest of `policies.WorkerSpec`, one worker to start.

`KEYWORDS` says which options `corral.run_worker` takes as keywords (of the same name):
those that mean something to a worker whose work is a Python function. The others describe
a command, an agent or a task worktree (a function worker has none: with `--call` they
are refused or have no effect), or are the command line's: `call` (a program passes the
function itself), `require` (a program checks its own tools), `provider` (a function
spends no agent account) and `workdir` (a function runs in its program's directory).
"""

from __future__ import annotations

from typing import Any

POSITIVE_S = 0.001  # the least positive duration: `1ms`
SANDBOXES = ("bwrap", "container", "off")  # `--sandbox`, a profile's `sandbox`
NETWORKS = ("on", "off")  # `--network`, a profile's `network`


class Option:
    """One option of a worker: where it lives in each place, its unit, default and help.

    A plain class, not a NamedTuple: every command that reads settings imports this table,
    and a NamedTuple class costs about half a millisecond to create (bench/cli_latency.py).
    """

    __slots__ = ("default", "field", "flag", "help", "key", "metavar", "minimum", "unit")

    def __init__(  # noqa: PLR0917 - one row of the table, its columns in order
        self,
        field: str,  # policies.WorkerOptions field (WorkerSpec's in START); setting `pool_<field>`
        key: str,  # under [pool] in config.toml ("" in START: no key)
        flag: str,  # on `worker start`, and but for START on `orchestrator start`
        unit: str,  # s | count | text | list | flag
        default: Any,
        minimum: float | None,
        help: str,
        metavar: str | None = None,
    ) -> None:
        self.field, self.key, self.flag, self.unit = field, key, flag, unit
        self.default, self.minimum, self.help, self.metavar = default, minimum, help, metavar

    @property
    def setting(self) -> str:
        """The flat setting name (and, in capitals, the variable CORRAL_<NAME>)."""
        return f"pool_{self.field}"


OPTIONS: tuple[Option, ...] = (
    Option("exec", "exec", "--exec", "text", "", None, "command run per task", "CMD"),
    Option("agent", "agent", "--agent", "text", "", None,
           "agent profile: claude, codex, aider, generic (with --exec) or your own", "NAME"),
    Option("model", "model", "--model", "text", "", None, "the agent's model", "M"),
    Option("agent_args", "agent_args", "--agent-arg", "list", (), None,
           "one more argument for the agent, repeatable", "ARG"),
    Option("provider", "provider", "--provider", "text", "", None,
           "provider account its agents spend (default: the profile's)", "NAME"),
    Option("call", "call", "--call", "text", "", None, "Python function run per task",
           "MODULE:FUNCTION"),
    Option("kinds", "kinds", "--kind", "list", (), None, "kind it runs, repeatable (default: any)"),
    Option("queues", "queues", "--queue", "list", (), None,
           "queue it serves, repeatable (default: any)"),
    Option("labels", "labels", "--label", "list", (), None,
           "label recorded on the worker, repeatable", "K=V"),
    Option("version", "version", "--version", "text", "", None,
           "version recorded on the worker (default: corral's)", "V"),
    Option("prompt_template", "prompt_template", "--prompt-template", "text", "", None,
           "prompt template file (${title}, ${description} ...)", "FILE"),
    Option("prompt_arg", "prompt_arg", "--prompt-arg", "flag", False, None,
           "pass the prompt as the last argument, not on stdin"),
    Option("prompt_arg_bare", "prompt_arg_bare", "--prompt-arg-bare", "flag", False, None,
           "with --prompt-arg, no -- before the prompt (a tool that refuses --)"),
    Option("workdir", "workdir", "--workdir", "text", "", None,
           "working directory of commands (default: here)", "DIR"),
    Option("timeout_s", "timeout", "--timeout", "s", None, POSITIVE_S,
           "default task timeout (a task's own wins)", "DURATION"),
    Option("concurrency", "concurrency", "--concurrency", "count", 1, 1,
           "tasks run at once (default 1)", "N"),
    Option("batch", "batch", "--batch", "count", 1, 1,
           "--call: claim up to N tasks at once (default 1)", "N"),
    Option("max_tasks", "max_tasks", "--max-tasks", "count", None, 1,
           "exit after this many tasks (a pool starts a fresh worker)", "N"),
    Option("lease_s", "lease", "--lease", "s", None, POSITIVE_S,
           "lease length (default lease_s)", "DURATION"),
    Option("stall_timeout_s", "stall_timeout", "--stall-timeout", "s", None, POSITIVE_S,
           "flag a command silent this long", "DURATION"),
    Option("kill_stalled", "kill_stalled", "--kill-stalled", "flag", False, None,
           "and kill it (fails the run as stalled)"),
    Option("grace_s", "grace", "--grace", "s", 5.0, 0,
           "SIGTERM to SIGKILL when killing a task (default 5s)", "DURATION"),
    Option("defer_delay_s", "defer_delay", "--defer-delay", "s", 900.0, 0,
           "delay after exit status 75 (default 15m)", "DURATION"),
    Option("worktree", "worktree", "--worktree", "flag", False, None,
           "run each task in its own git worktree and branch"),
    Option("base", "base", "--base", "text", "", None,
           "branch worktrees start from (default worktree.base, or HEAD's)", "BRANCH"),
    Option("keep_worktrees", "keep_worktrees", "--keep-worktrees", "flag", False, None,
           "keep each task's worktree after it ends"),
    Option("require", "require", "--require", "list", (), None,
           "a program it needs on PATH, NAME or NAME>=VERSION, repeatable", "TOOL"),
    Option("artifacts", "artifacts", "--artifacts", "list", (), None,
           "files to keep from each run, a glob relative to its working directory, "
           "repeatable", "GLOB"),
    Option("artifacts_max_mb", "artifacts_max_mb", "--artifacts-max-mb", "count", 100, 1,
           "most megabytes of artifacts kept from one run (default 100)", "MB"),
    Option("sandbox", "sandbox", "--sandbox", "text", "", None,
           "run each agent in a sandbox: bwrap, container or off "
           "(default: the agent profile's, else off)", "KIND"),
    Option("network", "network", "--network", "text", "", None,
           "a sandboxed run's network: on or off (default: the agent profile's, else on)",
           "on|off"),
)  # fmt: skip

START: tuple[Option, ...] = (
    Option("name", "", "--name", "text", "", None, ""),  # required: no worker is nameless
    Option("once", "", "--once", "flag", False, None, "run at most one task, then exit"),
    Option("shutdown_timeout_s", "", "--shutdown-timeout", "s", 300.0, 0,
           "how long SIGTERM waits for tasks (default 5m)", "DURATION"),
)  # fmt: skip

KEYWORDS = frozenset(
    {"name", "once", "shutdown_timeout_s", "kinds", "queues", "labels", "version"}
    | {"concurrency", "batch", "max_tasks", "lease_s"}
)
