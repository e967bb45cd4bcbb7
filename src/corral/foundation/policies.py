"""The slices of the settings each component receives (`settings.retry`, `settings.process`
...), and per-queue limits.

Apart from corral.foundation.settings so that a command that never asks for a slice never
builds these classes: each frozen dataclass costs a fraction of a millisecond to create, and every
`corral` command is a fresh process (bench/cli_latency.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from corral.foundation.documents import MAX_INT32
from corral.foundation.errors import InvalidInput
from corral.foundation.task_env import Sifted, sift


@dataclass(frozen=True, slots=True, kw_only=True)
class RetryPolicy:
    """How failed work is retried: exponential backoff with jitter, up to max_attempts."""

    max_attempts: int
    base_s: float
    max_s: float
    jitter: float


@dataclass(frozen=True, slots=True, kw_only=True)
class LeasePolicy:
    """How long a claim lasts and how often it may be renewed explicitly."""

    lease_s: float
    max_renewals: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LivenessPolicy:
    """When a silent worker becomes stale, then dead."""

    heartbeat_interval_s: float
    dead_after_missed: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ProcessPolicy:
    """How the pool supervisor restarts, stops and logs its worker processes."""

    restart_delay_s: float
    max_restart_delay_s: float
    max_restarts: int
    min_uptime_s: float
    kill_timeout_s: float
    log_max_bytes: int
    log_backups: int


@dataclass(frozen=True, slots=True, kw_only=True)
class EnvPolicy:
    """What a task's command, and a pool's worker process, inherit: `[env] deny` and
    `allow` as corral.foundation.task_env applies them (its docstring says the two layers).
    Patterns are shell patterns matched without regard to case (`*_token` is `*_TOKEN`);
    `declared` are the names an agent's profile declares, added to `allow`."""

    deny: tuple[str, ...]
    allow: tuple[str, ...]

    def for_task(self, environ: Mapping[str, str], declared: tuple[str, ...] = ()) -> Sifted:
        """`environ` as a task's command gets it: the allow-list, then the secret filter."""
        return sift(environ, deny=self.deny, allow=(*self.allow, *declared), allow_list=True)

    def for_worker(self, environ: Mapping[str, str], declared: tuple[str, ...] = ()) -> Sifted:
        """`environ` as a pool's worker process gets it: the secret filter alone."""
        return sift(environ, deny=self.deny, allow=(*self.allow, *declared), allow_list=False)

    def grants(self, name: str) -> bool:
        """Whether `[env] allow` writes `name` out whole (then it passes whatever matches)."""
        return any(name.upper() == allowed.upper() for allowed in self.allow)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerOptions:
    """What a worker runs and how: `worker start`'s options, each pool slot's too.

    One field per row of corral.foundation.worker_options (which says what each means); its defaults
    are there. Parsed, not yet checked against the world: runtime/worker/preflight.py does.
    """

    exec: str
    agent: str
    model: str
    agent_args: tuple[str, ...]
    provider: str
    call: str
    kinds: tuple[str, ...]
    queues: tuple[str, ...]
    labels: tuple[str, ...]  # K=V
    version: str
    prompt_template: str
    prompt_arg: bool
    prompt_arg_bare: bool
    workdir: str
    timeout_s: float | None
    concurrency: int
    batch: int
    max_tasks: int | None
    lease_s: float | None
    stall_timeout_s: float | None
    kill_stalled: bool
    grace_s: float
    defer_delay_s: float
    worktree: bool
    base: str
    keep_worktrees: bool
    require: tuple[str, ...]  # NAME or NAME>=VERSION (model/tools.py)
    artifacts: tuple[str, ...]  # globs (model/artifacts.py)
    artifacts_max_mb: int
    sandbox: str  # bwrap | container | off | "" (the agent profile's: model/sandboxes.py)
    network: str  # on | off | "" (the agent profile's)


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSpec:
    """One worker to start: its options, and what a pool decides for each of its slots
    (corral.foundation.worker_options.START says what each means and its default). `worker start`
    parses its flags into one, `run_worker` its keywords: runtime/worker/assembly.py builds
    the runner from it."""

    name: str
    options: WorkerOptions
    once: bool
    shutdown_timeout_s: float


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolGroup:
    """One group of a pool's slots: `workers` slots named `NAME-1` ... `NAME-N`, each
    running a worker with `options`. A pool without `[[pool.group]]` is one group, `slot`."""

    name: str
    workers: int
    options: WorkerOptions


@dataclass(frozen=True, slots=True, kw_only=True)
class PoolSpec:
    """What the orchestrator's pool runs: its groups, each with its count and options;
    `workers` counts them all, `options` are the `[pool]` keys' (a group's start from them)."""

    workers: int
    options: WorkerOptions
    groups: tuple[PoolGroup, ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class WorktreePolicy:
    """Where task worktrees go, what their branches are called, how reviews end."""

    dir: str
    branch_template: str
    base: str
    setup: str
    merge_strategy: str
    review_stale_after_s: float
    land: str = "merge"  # LAND_MODES: what a runner does with a finished task's branch
    land_command: str = ""  # with land = "command": the command that gets the branch
    pr_command: str = ""  # with land = "pr": opens the pull request (git/pull_requests.py)
    pr_view_command: str = ""  # with land = "pr": the reconciler's look at one
    pr_reopen_command: str = ""  # with land = "pr": reopens one closed unmerged ("": a new one)
    pr_checks_command: str = ""  # with land = "pr": the reconciler's look at its checks ("": none)
    pr_check_log_command: str = ""  # with land = "pr": a failed check's log ({run}; "": none)
    merge_approved: bool = False  # the reconcile pass merges approved tasks (git/merge_queue.py)
    verify: str = ""  # a command that must pass in the worktree after a successful run
    require_rebase: bool = False  # approve only branches on top of their base
    verify_timeout_s: float = 1800.0
    verify_retries: int = 2  # verify failures sent back to the agent before the task waits
    commit: str = "auto"  # COMMIT_MODES: corral commits what the agent left, or only the agent
    author: str = "corral <corral@localhost>"  # of the commits corral makes for a run
    on_empty: str = "wait"  # ON_EMPTY: what a run that changed nothing ends as
    remote: str = ""  # the remote whose base is the base of record (git/remote_base.py)


@dataclass(frozen=True, slots=True, kw_only=True)
class QueueLimits:
    """Backpressure for one queue; None means unlimited.

    max_ready bounds the tasks waiting (enqueue is refused beyond it), max_running the tasks
    held at once, rate the claims started per minute.
    """

    max_ready: int | None = None
    max_running: int | None = None
    rate: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderConfig:
    """A provider account as config.toml declares it (`[providers."claude:work"]`): its cap,
    written into the store like queue limits, and the environment its agents get.

    `env` values are literal, or `${NAME}`: the variable NAME of the environment corral
    itself was started with (the orchestrator's, or `worker start`'s), so that a key need
    not be written in the file; agents of other accounts never get either.
    """

    max_running: int | None = None
    env: tuple[tuple[str, str], ...] = ()


WHOLE_LIMITS = ("max_ready", "max_running")


def check_limit(where: str, name: str, value: float) -> None:
    """Refuse a queue limit (`name`, as `where` says it) that is not greater than 0 and
    finite, or, for max_ready and max_running, not a whole number an `integer` column holds."""
    if name in WHOLE_LIMITS:
        if not (0 < value <= MAX_INT32 and float(value).is_integer()):
            raise InvalidInput(where, f"a whole number greater than 0, at most {MAX_INT32}", value)
    elif not 0 < value < float("inf"):
        raise InvalidInput(where, "a finite number greater than 0", value)
