"""corral's own environment variables that are not settings, in one table.

Settings have their variables already (`CORRAL_<NAME>`, foundation.settings.SPEC). The
rest are of two kinds: those corral's commands read (the store, the namespace, the API
token ...) and those corral sets for what it runs (a task's command, a notify command, a
land command). Both are listed here once, so that `corral doctor` can name a `CORRAL_*`
variable that nothing reads (a typo such as `CORRAL_HEARTBEAT_INTERVAL`, which would
otherwise be silently ignored), the command layer knows which variables are not settings,
and a test holds docs/cli.md's table to this one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # logging costs a command's start-up 8 ms: the runtime's log lines alone
    import logging

#: Read by corral's commands (beside the settings' variables).
READ: Mapping[str, str] = {
    "CORRAL_DB": "the store, when --db is not given",
    "CORRAL_NAMESPACE": "the namespace, when --namespace is not given",
    "CORRAL_CLAIM_TOKEN": "the fencing token, when --token is not given",
    "CORRAL_TOKEN": "the API token of an http(s):// store",
    "CORRAL_CONFIG": "the settings file, instead of config.toml beside the database",
    "CORRAL_LOG_LEVEL": "a runner's least level of log line",
    "CORRAL_PORTABLE": "process metrics through psutil rather than /proc",
    "CORRAL_WORKER_KEY": "a runner's own key, proving the process is the worker",
    "CORRAL_ORCHESTRATOR_KEY": "an orchestrator's own key, proving the process is it",
    "CORRAL_PROVIDER_ENV": "the provider environment an orchestrator resolved for its pool",
}

#: Set by corral for the commands it runs; a command of corral's run by one reads some.
GIVEN: Mapping[str, str] = {
    "CORRAL_TASK_ID": "the task a command runs for",
    "CORRAL_TASK_TITLE": "the task's title (a land command)",
    "CORRAL_WORKER_ID": "the worker running the command",
    "CORRAL_RUN_ID": "the run",
    "CORRAL_RUN_KEY": "the key of the runner's runs, proving a process left behind is one",
    "CORRAL_WORKER_TMP": "the worker's own temporary folder (also TMPDIR)",
    "CORRAL_WORKTREE_PATH": "the task's worktree",
    "CORRAL_BRANCH": "the task's branch",
    "CORRAL_BASE_REF": "the branch the task's work lands on",
    "CORRAL_REVIEW_NOTE": "the last request-changes note",
    "CORRAL_OUTBOX": "the run's outbox file, with [files] mirror",
    "CORRAL_NOTICE": "a notify command's kind of notice",
    "CORRAL_EVENT_ID": "the event a notify command is told of",
}

#: Every variable of corral's that is not a setting.
NOT_SETTINGS = frozenset(READ) | frozenset(GIVEN)

#: The ones that, alone, leave the settings nothing to check: a command seeing only these
#: is spared building them (CORRAL_CONFIG names their file, so it is not one).
INERT = NOT_SETTINGS - {"CORRAL_CONFIG"}


def unknown(environ: Iterable[str], settings: Iterable[str]) -> list[tuple[str, str | None]]:
    """The `CORRAL_*` names in `environ` that neither a setting (`settings`, their
    variables) nor this table knows, each with the closest known name (None: none near)."""
    import difflib  # noqa: PLC0415 - doctor's alone: every command imports this table

    known = sorted(NOT_SETTINGS | frozenset(settings))
    strays = sorted(n for n in environ if n.startswith("CORRAL_") and n not in known)
    return [(n, next(iter(difflib.get_close_matches(n, known, 1, 0.8)), None)) for n in strays]


def log_ignored(log: logging.Logger, source: str, environ: Iterable[str]) -> None:
    """A warning line per stray `CORRAL_*` name of `environ` (`SOURCE.env_ignored
    name=CORRAL_LEASE meant=CORRAL_LEASE_S`), where a long-running command starts: a pool
    started with a misspelt setting says so in its log, not only in `corral doctor`."""
    import logging  # noqa: PLC0415 - the runtime's alone

    from corral.foundation.logs import event  # noqa: PLC0415
    from corral.foundation.printable import one_line  # noqa: PLC0415
    from corral.foundation.settings import setting_variables  # noqa: PLC0415

    for name, near in unknown(environ, setting_variables()):
        event(log, f"{source}.env_ignored", logging.WARNING, name=one_line(name, 80), meant=near)
