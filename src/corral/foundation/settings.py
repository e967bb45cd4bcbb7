"""One settings record: every tunable with its default, unit and reason, validated in one place.

Sources, later ones winning: defaults < the config file (`config.toml` beside the
database, e.g. `.corral/config.toml`, or `CORRAL_CONFIG`) < the environment (`CORRAL_<NAME>`) <
command-line flags. Each setting has a flat name (the field, and the variable `CORRAL_<NAME>`)
and a place in the file (`[section] key`). Components receive the slice they need
(`settings.retry`, `settings.process` ...), never the whole record. The record remembers
where each value came from, so `corral config show` can say.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import UTC, tzinfo
from typing import TYPE_CHECKING, Any

from corral.foundation.documents import MAX_INT32, MAX_INT64
from corral.foundation.durations import parse_duration_s
from corral.foundation.errors import InvalidInput
from corral.foundation.records import field, record, replace
from corral.foundation.worker_options import OPTIONS, POSITIVE_S

if TYPE_CHECKING:  # built where a slice is asked for (corral.foundation.policies says why)
    from corral.foundation.policies import (
        EnvPolicy,
        LeasePolicy,
        LivenessPolicy,
        PoolSpec,
        ProcessPolicy,
        ProviderConfig,
        QueueLimits,
        RetryPolicy,
        WorkerOptions,
        WorktreePolicy,
    )
    from corral.foundation.pool_groups import GroupConfig

#: The secret filter's names (corral.foundation.task_env): shell patterns matched without
#: regard to case. A value holding a secret is withheld too (task_env.secret_in). Broad on
#: purpose: a task's command gets only what the allow-list let through anyway, and a name
#: written out whole in `[env] allow` passes it. TOKENIZERS_PARALLELISM, KEYBOARD_*, PWD
#: and SSH_AUTH_SOCK pass; MONKEY, SSH_ASKPASS and BYPASS do not (docs/configuration.md).
DEFAULT_ENV_DENY = (
    "*TOKEN",
    "*TOKENS",
    "TOKEN_*",
    "*_TOKEN_*",
    "*SECRET*",
    "*PASSWORD*",
    "*PASSWD*",
    "*PASS",
    "*_PWD",
    "*KEY",
    "*KEYS",
    "*_KEY_*",
    "*COOKIE*",
    "*BEARER*",
    "*CREDENTIAL*",
    "*PRIVATE*",
    "*WEBHOOK*",
    "*_PAT",
    "*_AUTH",
    "AWS_*",
)


class Spec:
    """What one setting is: where it lives in the file, its default, bound, unit and reason.
    (A plain class: a NamedTuple's is compiled at every start, and the table reads only
    the attributes.)"""

    __slots__ = ("default", "key", "minimum", "reason", "unit")

    def __init__(self, key: str, default: Any, minimum: float | None, unit: str, reason: str):
        self.key = key  # "section.key" in config.toml
        self.default = default
        self.minimum = minimum
        self.unit = unit  # s | count | fraction | text | list | flag
        self.reason = reason


# The table is the documentation's source too (docs/configuration.md lists the same rows).
SPEC: dict[str, Spec] = {
    "lease_s": Spec(
        "lease.duration", 1800, 1, "s", "a claim lasts this long unless renewed or heartbeated"
    ),
    "max_renewals": Spec(
        "lease.max_renewals",
        10,
        0,
        "count",
        "explicit renewals per claim: hung work cannot hold on",
    ),
    "heartbeat_interval_s": Spec(
        "heartbeat.interval", 10, 0.05, "s", "how often workers are told to heartbeat"
    ),
    "dead_after_missed": Spec(
        "heartbeat.dead_after_missed", 3, 1, "count", "missed heartbeats before a worker is dead"
    ),
    "max_attempts": Spec(
        "retry.max_attempts", 3, 1, "count", "runs of a task before it fails for good"
    ),
    "max_crashes": Spec(
        "retry.max_crashes", 3, 1, "count", "lost leases before a task is quarantined as poison"
    ),
    "retry_base_s": Spec("retry.base", 10, 0, "s", "first retry delay; doubles with each attempt"),
    "retry_max_s": Spec("retry.max", 3600, 0, "s", "retry delays never exceed this"),
    "retry_jitter": Spec(
        "retry.jitter", 0.2, 0, "fraction", "random spread of retry delays, so retries do not align"
    ),
    "reconcile_interval_s": Spec(
        "reconcile.interval", 60, 1, "s", "how often the orchestrator repairs orphaned work"
    ),
    "retention_finished_after_s": Spec(
        "retention.finished_after",
        None,
        POSITIVE_S,
        "s",
        "finished tasks unchanged this long are deleted, with their runs (default: kept)",
    ),
    "retention_events_after_s": Spec(
        "retention.events_after",
        None,
        POSITIVE_S,
        "s",
        "events older than this are deleted (default: kept)",
    ),
    "retention_workers_after_s": Spec(
        "retention.workers_offline_after",
        604800,
        POSITIVE_S,
        "s",
        "dead or offline workers silent this long, named by no claim or run, are deleted",
    ),
    "retention_interval_s": Spec(
        "retention.interval", 3600, 1, "s", "how often the leading orchestrator prunes"
    ),
    "retention_unlanded_work": Spec(
        "retention.unlanded_work",
        False,
        None,
        "flag",
        "finished tasks whose unlanded work only backup refs hold are deleted too",
    ),
    "auth_cache_s": Spec(
        "server.auth_cache",
        1.0,
        0,
        "s",
        "`corral serve` trusts a token it checked this long without reading it again",
    ),
    "allowed_hosts": Spec(
        "server.allowed_hosts",
        (),
        None,
        "list",
        "Host names `corral serve` answers besides the loopback's while no token exists",
    ),
    "scheduler_interval_s": Spec(
        "scheduler.interval",
        5,
        0.05,
        "s",
        "how often the leading orchestrator fires due schedules (apart from reconcile)",
    ),
    "scheduler_batch_size": Spec(
        "scheduler.batch_size", 100, 1, "count", "due schedules one scheduler pass reads at a time"
    ),
    "scheduler_max_fires": Spec(
        "scheduler.max_fires",
        1000,
        1,
        "count",
        "fires one scheduler pass makes at most; the rest wait for the next pass",
    ),
    "pool_workers": Spec(
        "pool.workers", 1, 1, "count", "worker processes the orchestrator keeps running"
    ),
    # Then pool_exec, pool_kinds ...: each worker option (corral.foundation.worker_options), below.
    "restart_delay_s": Spec(
        "process.restart_delay", 1, 0, "s", "first restart delay of a crashed worker; doubles"
    ),
    "max_restart_delay_s": Spec(
        "process.max_restart_delay", 60, 0, "s", "restart delays never exceed this"
    ),
    "max_restarts": Spec(
        "process.max_restarts", 10, 0, "count", "restarts in a row before a slot is failed"
    ),
    "min_uptime_s": Spec(
        "process.min_uptime", 10, 0, "s", "a worker up this long resets its restart delay"
    ),
    "kill_timeout_s": Spec(
        "process.kill_timeout", 10, 0, "s", "SIGTERM to SIGKILL when stopping a worker"
    ),
    "log_max_bytes": Spec(
        "process.log_max_bytes", 10_485_760, 1024, "count", "a worker's log rotates at this size"
    ),
    "log_backups": Spec("process.log_backups", 3, 0, "count", "rotated log files kept per worker"),
    "env_deny": Spec(
        "env.deny", DEFAULT_ENV_DENY, None, "list", "secrets never passed to tasks (patterns)"
    ),
    "env_allow": Spec(
        "env.allow", (), None, "list", "variables tasks get (a name written whole: even a secret)"
    ),
    "workdir_outside": Spec(
        "tasks.workdir_outside",
        False,
        None,
        "flag",
        "a task's payload workdir may lie outside the worker's workdir",
    ),
    "store_mode": Spec(
        "store.mode",
        "private",
        None,
        "text",
        "who may read corral's files: private (0700/0600) or group (0770/0660)",
    ),
    "worktree_dir": Spec(
        "worktree.dir", ".corral/worktrees", None, "text", "where task worktrees go (repo-relative)"
    ),
    "worktree_branch_template": Spec(
        "worktree.branch_template",
        "corral/{worker}/{task}",
        None,
        "text",
        "a task's branch name, from {worker} and {task}",
    ),
    "worktree_base": Spec(
        "worktree.base", "", None, "text", "branch tasks start from (empty: the checked-out one)"
    ),
    "worktree_remote": Spec(
        "worktree.remote",
        "",
        None,
        "text",
        "the remote whose base every host starts from and lands on (empty: this repository)",
    ),
    "worktree_setup": Spec(
        "worktree.setup", "", None, "text", "command run in each new worktree before the task"
    ),
    "merge_strategy": Spec(
        "worktree.merge_strategy",
        "merge",
        None,
        "text",
        "how `merge` lands a branch: ff, merge, squash",
    ),
    "worktree_land": Spec(
        "worktree.land",
        "merge",
        None,
        "text",
        "a finished task's branch without review: merge (onto the base), keep, command, pr",
    ),
    "worktree_land_command": Spec(
        "worktree.land_command",
        "",
        None,
        "text",
        "with land = command: run in the worktree, told the branch, base and task",
    ),
    "worktree_pr_command": Spec(
        "worktree.pr_command",
        "gh pr create --base {base} --head {branch} --title {title} --body-file {body_file}",
        None,
        "text",
        "with land = pr: opens the pull request and prints its URL ({base} ... whole arguments)",
    ),
    "worktree_pr_view_command": Spec(
        "worktree.pr_view_command",
        "gh pr view {url} --json state,mergeCommit",
        None,
        "text",
        "with land = pr: the reconciler's look at a pull request, as `gh pr view --json` answers",
    ),
    "worktree_pr_reopen_command": Spec(
        "worktree.pr_reopen_command",
        "gh pr reopen {url}",
        None,
        "text",
        "with land = pr: reopens a task's pull request closed unmerged when the task runs "
        "again (empty: a new one is opened)",
    ),
    "worktree_pr_checks_command": Spec(
        "worktree.pr_checks_command",
        "gh pr checks {url} --json name,state,bucket,link,startedAt",
        None,
        "text",
        "with land = pr: the reconciler's look at a pull request's checks, as `gh pr checks "
        "--json` answers (exit 8 pending); a failure is sent back to the agent (empty: never)",
    ),
    "worktree_pr_check_log_command": Spec(
        "worktree.pr_check_log_command",
        "gh run view {run} --log-failed",
        None,
        "text",
        "with land = pr: the failed log of a check's GitHub Actions run ({run}), its tail "
        "told to the agent (empty: no log)",
    ),
    "worktree_verify": Spec(
        "worktree.verify",
        "",
        None,
        "text",
        "command that must pass in the worktree after the agent, before done or landing",
    ),
    "worktree_verify_timeout_s": Spec(
        "worktree.verify_timeout", 1800, POSITIVE_S, "s", "how long worktree.verify may run"
    ),
    "worktree_verify_retries": Spec(
        "worktree.verify_retries",
        2,
        0,
        "count",
        "verify failures in a row sent back to the agent (no attempt spent) before it waits",
    ),
    "worktree_commit": Spec(
        "worktree.commit",
        "auto",
        None,
        "text",
        "after a run that succeeded: auto (corral commits what the agent left) or agent",
    ),
    "worktree_author": Spec(
        "worktree.author",
        "corral <corral@localhost>",
        None,
        "text",
        "the author of the commits corral makes for a run (worktree.commit = auto)",
    ),
    "worktree_on_empty": Spec(
        "worktree.on_empty",
        "wait",
        None,
        "text",
        "a run that changed nothing: wait (for a person), fail, or done",
    ),
    "review_queues": Spec(
        "worktree.review_queues", (), None, "list", "queues whose tasks all require review"
    ),
    "agents_resume": Spec(
        "agents.resume",
        True,
        None,
        "flag",
        "a task's next run resumes its agent's session (a task's payload resume = false: not it)",
    ),
    "agents_park_s": Spec(
        "agents.park_default",
        3600,
        1,
        "s",
        "how long a usage limit parks its provider when the agent does not say when it resets",
    ),
    "agents_park_min_s": Spec(
        "agents.park_min",
        60,
        0,
        "s",
        "a usage limit parks its provider at least this long, even when its reset is now",
    ),
    "status_file": Spec(
        "status.file",
        "",
        None,
        "text",
        "a JSON file of every slot's heartbeat (seed 001's schema) the orchestrator keeps",
    ),
    "status_interval_s": Spec(
        "status.interval", 1.0, POSITIVE_S, "s", "how often the status file is brought up to date"
    ),
    "board_timeout_s": Spec(
        "board.timeout",
        1800,
        POSITIVE_S,
        "s",
        "a seed 001 task's timeout when it names none (the seed's DEFAULT_TIMEOUT)",
    ),
    "board_max_timeout_s": Spec(
        "board.max_timeout",
        7200,
        POSITIVE_S,
        "s",
        "the longest timeout seed 001's routes give a task (the seed's MAX_TIMEOUT)",
    ),
    "files_mirror": Spec(
        "files.mirror",
        False,
        None,
        "flag",
        "keep .corral/state/ (a JSON file per worker and per task in hand) and take in "
        "each run's outbox file (seed 004)",
    ),
    "notify_command": Spec(
        "notify.command",
        "",
        None,
        "text",
        "run for each notice (task failed, waiting, review requested, worker dead, "
        "provider parked or unparked ...; its JSON on stdin)",
    ),
    "notify_url": Spec(
        "notify.url",
        "",
        None,
        "text",
        "each notice POSTed there as JSON (an http(s) URL, credentials never shown)",
    ),
    "notify_ntfy": Spec(
        "notify.ntfy",
        "",
        None,
        "text",
        "each notice published to this ntfy topic URL as a line of text (never shown whole)",
    ),
    "notify_events": Spec(
        "notify.events", (), None, "list", "only these kinds of notice (empty: every kind)"
    ),
    "notify_queues": Spec(
        "notify.queues", (), None, "list", "only notices of tasks in these queues (empty: any)"
    ),
    "notify_namespaces": Spec(
        "notify.namespaces",
        (),
        None,
        "list",
        "only an orchestrator in one of these namespaces notifies (empty: any)",
    ),
    "notify_dead_every_s": Spec(
        "notify.dead_every",
        3600,
        0,
        "s",
        "at most one worker.dead notice per worker name this often (a crash-looping slot)",
    ),
    "budgets_day_zone": Spec(
        "budgets.day_zone",
        "UTC",
        None,
        "text",
        "the time zone whose midnight starts a day cap's day (an IANA name: Europe/Paris)",
    ),
    "review_require_rebase": Spec(
        "worktree.require_rebase",
        False,
        None,
        "flag",
        "approve only branches on top of their base; changes requested say to rebase",
    ),
    "worktree_merge_approved": Spec(
        "worktree.merge_approved",
        False,
        None,
        "flag",
        "the reconcile pass merges approved tasks, oldest approval first (no `corral merge`)",
    ),
    "review_stale_after_s": Spec(
        "worktree.review_stale_after", 86400, 0, "s", "a review waiting longer is flagged stale"
    ),
}

# Every option of `worker start` is a [pool] key too: one row each, from the one table.
SPEC.update(
    (o.setting, Spec(f"pool.{o.key}", o.default, o.minimum, o.unit, o.help)) for o in OPTIONS
)

_BY_KEY = {spec.key: name for name, spec in SPEC.items()}
_SECTIONS = sorted({spec.key.split(".")[0] for spec in SPEC.values()} | {"queues", "providers"})
_LIMIT_KEYS = ("max_ready", "max_running", "rate")
# The most a count may be: what the store's `integer` columns hold (max_attempts and the
# queue limits are stored), but fewer processes and threads than would exhaust a host
# before the first task ran, and more log bytes than fit in 2 GB.
MAX_POOL_WORKERS = 1000
_MAXIMUM = {
    "pool_workers": MAX_POOL_WORKERS,
    "pool_concurrency": MAX_POOL_WORKERS,
    "log_max_bytes": MAX_INT64,
}


MERGE_STRATEGIES = ("ff", "merge", "squash")
LAND_MODES = ("merge", "keep", "command", "pr")
COMMIT_MODES = ("auto", "agent")
ON_EMPTY = ("wait", "fail", "done")
STORE_MODES = ("private", "group")
_CHOICES = {
    "merge_strategy": MERGE_STRATEGIES,
    "worktree_land": LAND_MODES,
    "worktree_commit": COMMIT_MODES,
    "worktree_on_empty": ON_EMPTY,
    "store_mode": STORE_MODES,
}
FLAGS = "command line"  # the source of values given as flags, as `config show` would say
# `Name <email>`, as git's --author takes it (the name not empty, nothing after the `>`).
# Compiled where first matched (re's cache), as WEBHOOK below: the default needs no match.
AUTHOR = r"[^<>\n]*[^<>\s][^<>\n]* <[^<>\s]+>"
# `[notify] url`: http(s), a host (a name or [IPv6], userinfo allowed before it, a port
# after it), then a path or nothing. Compiled by `re` where first matched (its cache): a
# webhook is rare, and every command reads the settings.
WEBHOOK = (
    r"(https?://)(?:[^\s/?#@]*@)?((?:\[[0-9A-Fa-f:.]+\]|[^\s/?#@:\[\]]+)(?::(\d{1,5}))?)"
    r"([/?#]\S*)?"
)


def _check_webhook(url: str, name: str) -> None:
    """`[notify] url` (or `ntfy`, `name`) empty, or http(s) with a host and a port that is
    one; the error never quotes it (its secret may be anywhere in it: an ntfy topic is
    one)."""
    found = re.fullmatch(WEBHOOK, url) if url else None
    if url and (found is None or (found[3] is not None and int(found[3]) > 65535)):
        raise InvalidInput(name, "an http:// or https:// URL with a host")


def shown_url(url: str) -> str:
    """A webhook URL as it may be shown or logged: scheme and host, `/***` for the rest.
    A webhook's secret is as often in its path (`/services/T/B/XXXX`) or query as in its
    userinfo, so none of them is shown."""
    found = re.fullmatch(WEBHOOK, url)
    if found is None:
        return "***" if url else ""
    return f"{found[1]}{found[2]}" + ("/***" if found[4] and found[4] != "/" else "")


_FLAG_WORDS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _default(name: str) -> Any:
    return SPEC[name].default


def _variable(name: str) -> str:
    """The environment variable of setting `name`."""
    return f"CORRAL_{name.upper()}"


def setting_variables() -> list[str]:
    """Every setting's environment variable (foundation.variables has corral's others)."""
    return [_variable(name) for name in SPEC]


@record(frozen=True, slots=True, kw_only=True)
class Settings:
    """Every tunable, flat so files and the environment can name each one."""

    lease_s: float = float(_default("lease_s"))
    max_renewals: int = int(_default("max_renewals"))
    heartbeat_interval_s: float = float(_default("heartbeat_interval_s"))
    dead_after_missed: int = int(_default("dead_after_missed"))
    max_attempts: int = int(_default("max_attempts"))
    max_crashes: int = int(_default("max_crashes"))
    retry_base_s: float = float(_default("retry_base_s"))
    retry_max_s: float = float(_default("retry_max_s"))
    retry_jitter: float = float(_default("retry_jitter"))
    reconcile_interval_s: float = float(_default("reconcile_interval_s"))
    retention_finished_after_s: float | None = _default("retention_finished_after_s")
    retention_events_after_s: float | None = _default("retention_events_after_s")
    retention_workers_after_s: float | None = _default("retention_workers_after_s")
    retention_interval_s: float = float(_default("retention_interval_s"))
    retention_unlanded_work: bool = _default("retention_unlanded_work")
    auth_cache_s: float = float(_default("auth_cache_s"))
    allowed_hosts: tuple[str, ...] = _default("allowed_hosts")
    scheduler_interval_s: float = float(_default("scheduler_interval_s"))
    scheduler_batch_size: int = int(_default("scheduler_batch_size"))
    scheduler_max_fires: int = int(_default("scheduler_max_fires"))
    pool_workers: int = int(_default("pool_workers"))
    # The worker options (corral.foundation.worker_options), in its order; a test holds them to it.
    pool_exec: str = _default("pool_exec")
    pool_agent: str = _default("pool_agent")
    pool_model: str = _default("pool_model")
    pool_agent_args: tuple[str, ...] = _default("pool_agent_args")
    pool_provider: str = _default("pool_provider")
    pool_call: str = _default("pool_call")
    pool_kinds: tuple[str, ...] = _default("pool_kinds")
    pool_queues: tuple[str, ...] = _default("pool_queues")
    pool_labels: tuple[str, ...] = _default("pool_labels")
    pool_version: str = _default("pool_version")
    pool_prompt_template: str = _default("pool_prompt_template")
    pool_prompt_arg: bool = _default("pool_prompt_arg")
    pool_prompt_arg_bare: bool = _default("pool_prompt_arg_bare")
    pool_workdir: str = _default("pool_workdir")
    pool_timeout_s: float | None = _default("pool_timeout_s")
    pool_concurrency: int = _default("pool_concurrency")
    pool_batch: int = _default("pool_batch")
    pool_max_tasks: int | None = _default("pool_max_tasks")
    pool_lease_s: float | None = _default("pool_lease_s")
    pool_stall_timeout_s: float | None = _default("pool_stall_timeout_s")
    pool_kill_stalled: bool = _default("pool_kill_stalled")
    pool_grace_s: float = _default("pool_grace_s")
    pool_defer_delay_s: float = _default("pool_defer_delay_s")
    pool_worktree: bool = _default("pool_worktree")
    pool_base: str = _default("pool_base")
    pool_keep_worktrees: bool = _default("pool_keep_worktrees")
    pool_require: tuple[str, ...] = _default("pool_require")
    pool_artifacts: tuple[str, ...] = _default("pool_artifacts")
    pool_artifacts_max_mb: int = _default("pool_artifacts_max_mb")
    pool_sandbox: str = _default("pool_sandbox")
    pool_network: str = _default("pool_network")
    restart_delay_s: float = float(_default("restart_delay_s"))
    max_restart_delay_s: float = float(_default("max_restart_delay_s"))
    max_restarts: int = int(_default("max_restarts"))
    min_uptime_s: float = float(_default("min_uptime_s"))
    kill_timeout_s: float = float(_default("kill_timeout_s"))
    log_max_bytes: int = int(_default("log_max_bytes"))
    log_backups: int = int(_default("log_backups"))
    env_deny: tuple[str, ...] = _default("env_deny")
    env_allow: tuple[str, ...] = _default("env_allow")
    workdir_outside: bool = _default("workdir_outside")
    store_mode: str = str(_default("store_mode"))
    worktree_dir: str = str(_default("worktree_dir"))
    worktree_branch_template: str = str(_default("worktree_branch_template"))
    worktree_base: str = str(_default("worktree_base"))
    worktree_setup: str = str(_default("worktree_setup"))
    worktree_remote: str = str(_default("worktree_remote"))
    worktree_merge_approved: bool = _default("worktree_merge_approved")
    merge_strategy: str = str(_default("merge_strategy"))
    worktree_land: str = str(_default("worktree_land"))
    worktree_land_command: str = str(_default("worktree_land_command"))
    worktree_pr_command: str = str(_default("worktree_pr_command"))
    worktree_pr_view_command: str = str(_default("worktree_pr_view_command"))
    worktree_pr_reopen_command: str = str(_default("worktree_pr_reopen_command"))
    worktree_pr_checks_command: str = str(_default("worktree_pr_checks_command"))
    worktree_pr_check_log_command: str = str(_default("worktree_pr_check_log_command"))
    worktree_verify: str = str(_default("worktree_verify"))
    worktree_verify_timeout_s: float = float(_default("worktree_verify_timeout_s"))
    worktree_verify_retries: int = int(_default("worktree_verify_retries"))
    worktree_commit: str = str(_default("worktree_commit"))
    worktree_author: str = str(_default("worktree_author"))
    worktree_on_empty: str = str(_default("worktree_on_empty"))
    agents_resume: bool = _default("agents_resume")
    agents_park_s: float = float(_default("agents_park_s"))
    agents_park_min_s: float = float(_default("agents_park_min_s"))
    notify_command: str = str(_default("notify_command"))
    notify_url: str = str(_default("notify_url"))
    notify_ntfy: str = str(_default("notify_ntfy"))
    notify_events: tuple[str, ...] = _default("notify_events")
    notify_queues: tuple[str, ...] = _default("notify_queues")
    notify_namespaces: tuple[str, ...] = _default("notify_namespaces")
    notify_dead_every_s: float = float(_default("notify_dead_every_s"))
    budgets_day_zone: str = str(_default("budgets_day_zone"))
    status_file: str = str(_default("status_file"))
    status_interval_s: float = float(_default("status_interval_s"))
    board_timeout_s: float = float(_default("board_timeout_s"))
    board_max_timeout_s: float = float(_default("board_max_timeout_s"))
    files_mirror: bool = _default("files_mirror")
    review_stale_after_s: float = float(_default("review_stale_after_s"))
    review_queues: tuple[str, ...] = _default("review_queues")
    review_require_rebase: bool = _default("review_require_rebase")
    queues: Mapping[str, QueueLimits] = field(default_factory=dict)
    providers: Mapping[str, ProviderConfig] = field(default_factory=dict)
    pool_groups: tuple[GroupConfig, ...] = ()  # [[pool.group]] (corral.foundation.pool_groups)
    # Where each value came from ("default" when absent); not part of equality.
    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name, spec in SPEC.items():
            _check_bounds(name, spec, getattr(self, name))
        if not self.worktree_dir.strip():
            raise InvalidInput("worktree_dir", "a folder inside the repository", self.worktree_dir)
        if self.retry_jitter > 1:
            raise InvalidInput("retry_jitter", "a fraction between 0 and 1", self.retry_jitter)
        for name, choices in _CHOICES.items():
            if getattr(self, name) not in choices:
                raise InvalidInput(name, f"one of {', '.join(choices)}", getattr(self, name))
        self._check_land()
        if self.board_timeout_s > self.board_max_timeout_s:
            raise InvalidInput(
                "board_timeout_s",
                f"at most board.max_timeout ({self.board_max_timeout_s:g} s)",
                self.board_timeout_s,
            )
        if not self.env_deny:  # an empty list would pass every secret, and say nothing
            raise InvalidInput(
                "env_deny", "at least one pattern (to pass a secret, name it in env.allow)"
            )
        _check_webhook(self.notify_url, "notify_url")
        _check_webhook(self.notify_ntfy, "notify_ntfy")
        self.day_zone  # noqa: B018 - a zone that is no zone is refused here, naming its key
        author = self.worktree_author
        if author != SPEC["worktree_author"].default and not re.fullmatch(AUTHOR, author):
            raise InvalidInput("worktree_author", "Name <email>", author)
        if "{task}" not in self.worktree_branch_template:
            raise InvalidInput(
                "worktree_branch_template",
                "a template naming {task}",
                self.worktree_branch_template,
            )

    def _check_land(self) -> None:
        """What `worktree.land` needs beside it: a command to run, a remote to push to."""
        if self.worktree_land == "command" and not self.worktree_land_command.strip():
            raise InvalidInput(
                "worktree_land_command", "a command to run, since worktree.land is command"
            )
        if self.worktree_land == "pr" and not self.worktree_remote.strip():
            raise InvalidInput(
                "worktree_remote", "a remote to push branches to, since worktree.land is pr"
            )

    @property
    def retry(self) -> RetryPolicy:
        """The retry slice."""
        from corral.foundation.policies import RetryPolicy

        return RetryPolicy(
            max_attempts=self.max_attempts,
            base_s=self.retry_base_s,
            max_s=self.retry_max_s,
            jitter=self.retry_jitter,
        )

    @property
    def lease(self) -> LeasePolicy:
        """The lease slice."""
        from corral.foundation.policies import LeasePolicy

        return LeasePolicy(lease_s=self.lease_s, max_renewals=self.max_renewals)

    @property
    def liveness(self) -> LivenessPolicy:
        """The liveness slice."""
        from corral.foundation.policies import LivenessPolicy

        return LivenessPolicy(
            heartbeat_interval_s=self.heartbeat_interval_s,
            dead_after_missed=self.dead_after_missed,
        )

    @property
    def process(self) -> ProcessPolicy:
        """The supervisor's slice."""
        from corral.foundation.policies import ProcessPolicy

        return ProcessPolicy(
            restart_delay_s=self.restart_delay_s,
            max_restart_delay_s=self.max_restart_delay_s,
            max_restarts=self.max_restarts,
            min_uptime_s=self.min_uptime_s,
            kill_timeout_s=self.kill_timeout_s,
            log_max_bytes=self.log_max_bytes,
            log_backups=self.log_backups,
        )

    @property
    def day_zone(self) -> tzinfo:
        """`[budgets] day_zone` as a time zone; InvalidInput naming the key for a name the
        system's time zone database does not have."""
        if self.budgets_day_zone == "UTC":
            return UTC
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only a zone other than UTC

        expected = "an IANA time zone name such as Europe/Paris or UTC"
        try:
            return ZoneInfo(self.budgets_day_zone)
        except (ZoneInfoNotFoundError, ValueError):
            raise InvalidInput("budgets_day_zone", expected, self.budgets_day_zone) from None

    @property
    def env(self) -> EnvPolicy:
        """The environment filter's slice."""
        from corral.foundation.policies import EnvPolicy

        return EnvPolicy(deny=self.env_deny, allow=self.env_allow)

    @property
    def pool(self) -> PoolSpec:
        """The pool's slice (flags of `orchestrator start` override it)."""
        from corral.foundation.policies import PoolGroup, PoolSpec

        options = self._worker_options({})
        groups = tuple(
            PoolGroup(name=g.name, workers=g.workers, options=self._worker_options(g.values))
            for g in self.pool_groups
        ) or (PoolGroup(name="slot", workers=self.pool_workers, options=options),)
        workers = sum(g.workers for g in groups)
        return PoolSpec(workers=workers, options=options, groups=groups)

    def _worker_options(self, own: Mapping[str, Any]) -> WorkerOptions:
        """The `[pool]` options with a group's `own` values, which a flag still overrides."""
        from corral.foundation.policies import WorkerOptions

        return WorkerOptions(
            **{
                o.field: own[o.setting]
                if o.setting in own and self.source_of(o.setting) != FLAGS
                else getattr(self, o.setting)
                for o in OPTIONS
            }
        )

    @property
    def worktree(self) -> WorktreePolicy:
        """The worktree and review slice."""
        from corral.foundation.policies import WorktreePolicy

        return WorktreePolicy(
            dir=self.worktree_dir,
            branch_template=self.worktree_branch_template,
            base=self.worktree_base,
            setup=self.worktree_setup,
            remote=self.worktree_remote,
            merge_strategy=self.merge_strategy,
            review_stale_after_s=self.review_stale_after_s,
            require_rebase=self.review_require_rebase,
            land=self.worktree_land,
            land_command=self.worktree_land_command,
            pr_command=self.worktree_pr_command,
            pr_view_command=self.worktree_pr_view_command,
            pr_reopen_command=self.worktree_pr_reopen_command,
            pr_checks_command=self.worktree_pr_checks_command,
            pr_check_log_command=self.worktree_pr_check_log_command,
            merge_approved=self.worktree_merge_approved,
            verify=self.worktree_verify,
            verify_timeout_s=self.worktree_verify_timeout_s,
            verify_retries=self.worktree_verify_retries,
            commit=self.worktree_commit,
            author=self.worktree_author,
            on_empty=self.worktree_on_empty,
        )

    def source_of(self, name: str) -> str:
        """Where the value of setting `name` (or `queues.NAME`) came from."""
        return self.origins.get(name, "default")

    def rows(self) -> list[dict[str, Any]]:
        """Every setting as `config show --json` lists it (docs/cli.md): its `section.key`,
        variable, value, unit and source; then each queue limit that is set. `notify.url`
        and `notify.ntfy` show their scheme and host only (its secret may be anywhere in it)."""
        rows: list[dict[str, Any]] = []
        for name, spec in SPEC.items():
            value = getattr(self, name)
            if name in ("notify_url", "notify_ntfy"):
                value = shown_url(value)
            rows.append(
                {
                    "key": spec.key,
                    "env": _variable(name),
                    "value": list(value) if isinstance(value, tuple) else value,
                    "unit": spec.unit,
                    "source": self.source_of(name),
                }
            )
        for queue, limits in sorted(self.queues.items()):
            for limit in _LIMIT_KEYS:
                value = getattr(limits, limit)
                if value is not None:
                    rows.append(
                        {
                            "key": f"queues.{queue}.{limit}",
                            "env": None,
                            "value": value,
                            "unit": "per minute" if limit == "rate" else "count",
                            "source": self.source_of(f"queues.{queue}"),
                        }
                    )
        return rows + self._group_rows()

    def _group_rows(self) -> list[dict[str, Any]]:
        """Each `[[pool.group]]`'s keys, as `config show` lists them: `pool.group[N].KEY`."""
        rows = []
        for n, group in enumerate(self.pool_groups, start=1):
            own = [("name", group.name, "text"), ("workers", group.workers, "count")]
            own += [
                (SPEC[k].key.partition(".")[2], v, SPEC[k].unit) for k, v in group.values.items()
            ]
            for key, value, unit in own:
                shown = list(value) if isinstance(value, tuple) else value
                rows.append(
                    {
                        "key": f"pool.group[{n}].{key}",
                        "env": None,
                        "value": shown,
                        "unit": unit,
                        "source": self.source_of("pool.group"),
                    }
                )
        return rows

    def with_values(
        self,
        values: Mapping[str, Any],
        source: str,
        labels: Mapping[str, str] | None = None,
        *,
        origin: str | None = None,
    ) -> Settings:
        """A copy with `values` (by flat name) applied, recorded as coming from `origin`
        (default: `source`).

        Unknown names and bad values are InvalidInput naming `source` and the setting as the
        user wrote it (`labels` maps a flat name to, say, its `section.key` in a file).
        """
        labels = labels or {}
        known = SPEC.keys()  # each a field: __post_init__ reads every one
        changes: dict[str, Any] = {}
        for name, raw in values.items():
            if name not in known:
                raise InvalidInput(_at(source, name), f"one of {', '.join(sorted(known))}")
            changes[name] = _coerce(_at(source, labels.get(name, name)), raw, SPEC[name].unit)
        origins = dict.fromkeys(changes, source if origin is None else origin)
        return self._replaced(changes, origins, source, labels)

    def with_flags(self, values: Mapping[str, Any]) -> Settings:
        """A copy with command-line flags applied (by flat name, e.g. `pool_timeout_s`).

        A bad value names the option as both commands' users know it (`timeout`), with
        the same checks as the `[pool]` key gets; the source shown is "command line".
        """
        labels = {name: SPEC[name].key.partition(".")[2] for name in values if name in SPEC}
        return self.with_values(values, "", labels, origin=FLAGS)

    def _replaced(
        self,
        changes: dict[str, Any],
        origins: dict[str, str],
        source: str,
        labels: Mapping[str, str] | None = None,
    ) -> Settings:
        try:
            return replace(self, **changes, origins={**self.origins, **origins})
        except InvalidInput as exc:
            label = (labels or {}).get(exc.field, exc.field)
            # The value as the check quoted it: never a secret it chose not to show.
            raise InvalidInput(_at(source, label), exc.expected, exc.got) from None


def _check_bounds(name: str, spec: Spec, value: Any) -> None:
    if value is None:  # an option left unset: the runner's own default applies
        return
    if spec.minimum is not None and not value >= spec.minimum:  # NaN fails too
        raise InvalidInput(name, _at_least(spec), value)
    maximum = _MAXIMUM.get(name, MAX_INT32)
    if spec.unit == "count" and value > maximum:
        raise InvalidInput(name, f"a value of at most {maximum}", value)


def _at_least(spec: Spec) -> str:
    if spec.minimum == POSITIVE_S:
        return "a duration greater than zero, such as 30m"
    return f"a value of at least {spec.minimum:g} ({spec.unit})"


def _at(source: str, label: str) -> str:
    """Where a bad value came from, as its error names it (a flag: its name alone)."""
    return f"{source}: {label}" if source else label


def _coerce(where: str, raw: Any, unit: str) -> Any:
    if unit == "s":
        return parse_duration_s(where, raw)
    if unit == "flag":
        return _flag(where, raw)
    if unit == "text":
        if not isinstance(raw, str):
            raise InvalidInput(where, "text", raw)
        return raw
    if unit == "list":
        if isinstance(raw, str):  # from the environment: comma-separated
            return tuple(part.strip() for part in raw.split(",") if part.strip())
        if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
            raise InvalidInput(where, "a list of strings", raw)
        return tuple(raw)
    return _number(where, raw, unit)


def _flag(where: str, raw: Any) -> bool:
    """true or false: a TOML boolean, or from the environment one of the words below."""
    if isinstance(raw, bool):
        return raw
    word = str(raw).strip().lower() if isinstance(raw, str) else None
    if word not in _FLAG_WORDS:
        raise InvalidInput(where, "true or false", raw)
    return _FLAG_WORDS[word]


def _number(where: str, raw: Any, unit: str) -> float | int:
    if isinstance(raw, bool):
        raise InvalidInput(where, f"a number ({unit})", raw)
    # Text (a flag, a variable) in ASCII digits alone: float() would take `+5`, ` 5`, `1_0`
    # and other scripts' digits (`٣`), which no other number corral reads accepts.
    if isinstance(raw, str) and not re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", raw):
        raise InvalidInput(where, f"a number ({unit})", raw)
    try:
        number = float(raw)
    except (TypeError, ValueError, OverflowError):  # OverflowError: an integer past 1e308
        raise InvalidInput(where, f"a number ({unit})", raw) from None
    if not abs(number) < float("inf"):  # NaN fails too
        raise InvalidInput(where, f"a finite number ({unit})", raw)
    if unit == "count":
        if not number.is_integer():
            raise InvalidInput(where, "a whole number", raw)
        return int(number)
    return number


def load_settings(
    environ: Mapping[str, str] | None = None, config_path: str | None = None
) -> Settings:
    """Defaults, then the config file if it exists, then `CORRAL_*` variables."""
    environ = os.environ if environ is None else environ
    settings = Settings()
    named = environ.get("CORRAL_CONFIG")
    if named and not os.path.isfile(named):
        raise InvalidInput("CORRAL_CONFIG", "the path of an existing TOML file", named)
    path = named or config_path
    if path and os.path.isfile(path):
        settings = _apply_file(settings, _read_toml(path), path)
    changes: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for name, spec in SPEC.items():
        variable = _variable(name)
        if variable in environ:
            changes[name] = _coerce(f"environment: {name}", environ[variable], spec.unit)
            origins[name] = f"environment ({variable})"
    return settings._replaced(changes, origins, "environment") if changes else settings


def _read_toml(path: str) -> dict[str, Any]:
    import tomllib  # only when a config file exists: keeps the CLI's start-up lean

    try:
        with open(path, "rb") as handle:
            return tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise InvalidInput(path, "a readable TOML file", str(exc)) from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(path, "a TOML file in UTF-8", str(exc)) from None
    except RecursionError:
        raise InvalidInput(path, "a TOML file whose values nest less than 500 deep") from None


def _apply_file(settings: Settings, data: dict[str, Any], path: str) -> Settings:
    """Sections by `section.key`; flat names at the top level or in `[corral]` (the older form)."""
    flat: dict[str, Any] = {}
    labels: dict[str, str] = {}
    queues: dict[str, QueueLimits] = {}
    providers: dict[str, ProviderConfig] = {}
    pool = data.get("pool")
    groups = None
    if isinstance(pool, dict) and "group" in pool:  # [[pool.group]]: read after the rest
        groups = pool["group"]
        data = {**data, "pool": {k: v for k, v in pool.items() if k != "group"}}
    for top, value in data.items():
        if top == "corral":
            if not isinstance(value, dict):
                raise InvalidInput(f"{path}: corral", "a [corral] table of settings")
            flat.update(value)
        elif top == "queues":
            queues = _queue_limits(value, path)
        elif top == "providers":
            providers = _providers(value, path)
        elif isinstance(value, dict):
            _section(top, value, path, flat, labels)
        else:
            flat[top] = value
    settings = _with_tables(settings.with_values(flat, path, labels), queues, providers, path)
    return settings if groups is None else _with_groups(settings, groups, path)


def _with_groups(settings: Settings, raw: Any, path: str) -> Settings:
    """`settings` with the file's `[[pool.group]]` tables (corral.foundation.pool_groups)."""
    from corral.foundation.pool_groups import parse_groups

    if settings.source_of("pool_workers") == path:
        expected = "no value beside [[pool.group]] (each group has its own workers)"
        raise InvalidInput(f"{path}: pool.workers", expected)
    groups = parse_groups(raw, path, settings, MAX_POOL_WORKERS)
    origins = {**settings.origins, "pool.group": path}
    return replace(settings, pool_groups=groups, origins=origins)


def _with_tables(
    settings: Settings,
    queues: dict[str, QueueLimits],
    providers: dict[str, ProviderConfig],
    path: str,
) -> Settings:
    """`settings` with the file's `[queues.NAME]` and `[providers.NAME]` tables, if any."""
    if not queues and not providers:
        return settings
    origins = {f"queues.{name}": path for name in queues}
    origins |= {f"providers.{name}": path for name in providers}
    return replace(
        settings,
        queues=queues or settings.queues,
        providers=providers or settings.providers,
        origins={**settings.origins, **origins},
    )


def _section(
    top: str, value: dict[str, Any], path: str, flat: dict[str, Any], labels: dict[str, str]
) -> None:
    """The keys of section `[top]` into `flat` (by setting name) and `labels`."""
    if top not in _SECTIONS:
        raise InvalidInput(f"{path}: [{top}]", f"one of the sections {', '.join(_SECTIONS)}")
    for key, raw in value.items():
        name = _BY_KEY.get(f"{top}.{key}")
        if name is None:
            keys = sorted(k for k in _BY_KEY if k.startswith(f"{top}."))
            raise InvalidInput(f"{path}: {top}.{key}", f"one of {', '.join(keys)}")
        flat[name] = raw
        labels[name] = f"{top}.{key}"


def _queue_limits(value: Any, path: str) -> dict[str, QueueLimits]:
    from corral.foundation.policies import QueueLimits, check_limit

    if not isinstance(value, dict):
        raise InvalidInput(f"{path}: queues", "tables such as [queues.NAME]")
    limits: dict[str, QueueLimits] = {}
    for queue, table in value.items():
        # The rule of queue names (model/names.check_name, a layer above this one): a
        # limit on a queue no task can be in is a typo, and its name is shown everywhere.
        if not queue or len(queue) > 100 or not queue.isprintable() or " " in queue:
            expected = "queue names of 1 to 100 printable characters without spaces"
            raise InvalidInput(f"{path}: queues", expected, queue)
        where = f"{path}: queues.{queue}"
        if not isinstance(table, dict):
            raise InvalidInput(where, "a table with max_ready, max_running or rate")
        parsed: dict[str, Any] = {}
        for key, raw in table.items():
            if key not in _LIMIT_KEYS:
                raise InvalidInput(f"{where}.{key}", f"one of {', '.join(_LIMIT_KEYS)}")
            number = _coerce(f"{where}.{key}", raw, "fraction" if key == "rate" else "count")
            check_limit(f"{where}.{key}", key, number)
            parsed[key] = number
        limits[queue] = QueueLimits(**parsed)
    return limits


def _providers(value: Any, path: str) -> dict[str, ProviderConfig]:
    """`[providers.NAME]` tables: `max_running` and an `env` table of strings (the names
    are checked where they are used: corral.usecases.usage)."""
    from corral.foundation.policies import ProviderConfig, check_limit

    if not isinstance(value, dict):
        raise InvalidInput(f"{path}: providers", 'tables such as [providers."claude:work"]')
    found: dict[str, ProviderConfig] = {}
    for name, table in value.items():
        where = f"{path}: providers.{name}"
        if not isinstance(table, dict) or set(table) - {"max_running", "env"}:
            raise InvalidInput(where, "a table with max_running and env")
        cap = table.get("max_running")
        if cap is not None:
            cap = _coerce(f"{where}.max_running", cap, "count")
            check_limit(f"{where}.max_running", "max_running", cap)
        env = table.get("env", {})
        if not isinstance(env, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and k and "=" not in k and "\0" not in v
            for k, v in env.items()
        ):
            raise InvalidInput(f"{where}.env", 'a table of NAME = "text" (or "${VAR}")')
        found[name] = ProviderConfig(max_running=cap, env=tuple(sorted(env.items())))
    return found
