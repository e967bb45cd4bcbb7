"""One worker assembled: a `WorkerSpec` checked, then made into a ready `Runner` with its job.

Every runner is built here: `corral worker start` parses its flags into a spec
(cli/worker_start.py), every pool worker is such a command (runtime/pool/worker_process.py),
and `corral.run_worker` builds the same spec from its keywords (api.py). So a worker
refuses the same options, with the same one line, filters its tasks' environment the
same way and logs the same lines however it was started.

    WorkerSpec ── prepare: preflight.check (exit 2), tools found (exit 3), logged;
                  no store yet, so a bad option is refused before any store is opened
               ─► Assembly ── runner(store): the job, one of
                     a Python function (`--call`, or `run_worker`'s)
                     a command (`--exec`, or `--agent`'s with its profile and provider),
                        with the task environment (the allow-list and the secret
                        filter: corral.foundation.task_env), the provider's env and
                        its own TMPDIR (removed when the runner is done); in task
                        worktrees (`--worktree`) with the verify step; an agent's
                        runs traced when OTEL_* ask (tracing.py: closed after)
                  ─► a ready Runner (its RunnerConfig taken from the spec: config.py)

The options are parsed from the defaults, not the settings in force: `[pool]` keys are
for the pool's workers, which get them as flags.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from corral.foundation.logs import event, logger
from corral.foundation.policies import WorkerOptions, WorkerSpec
from corral.foundation.settings import Settings
from corral.foundation.task_env import NOT_ALLOWED
from corral.foundation.variables import log_ignored
from corral.git.task_worktrees import TaskWorktrees
from corral.model.artifacts import MB
from corral.runtime.worker import preflight, tracing
from corral.runtime.worker.agent_runs import AgentSetup
from corral.runtime.worker.command_job import CommandJob
from corral.runtime.worker.config import runner_config
from corral.runtime.worker.jobs import Job
from corral.runtime.worker.python_job import PythonJob
from corral.runtime.worker.runner import Runner
from corral.runtime.worker.tmp import make_tmp, remove_tmp
from corral.runtime.worker.tools import log_tools
from corral.runtime.worker.verify_step import VerifyStep
from corral.runtime.worker.worktree_job import WorktreeJob
from corral.store import Store
from corral.store.location import runs_dir
from corral.store.urls import password_of
from corral.usecases.agents import agents_dir
from corral.usecases.usage import PROVIDER_ENV_VARIABLE, provider_env


def parse_options(given: Mapping[str, Any]) -> WorkerOptions:
    """The worker options `given` (by setting name, `pool_kinds`: text as flags give it, or
    Python values), parsed and bounded as the `[pool]` keys are, the rest at their default."""
    return Settings().with_flags(given).pool.options


@dataclass(frozen=True, slots=True, kw_only=True)
class Assembly:
    """A worker's spec checked, with what it was checked in: what `runner` builds from.
    (Not a registered worker, model/workers.py: that comes when the runner runs.)"""

    spec: WorkerSpec
    checked: preflight.Checked
    settings: Settings
    db: str  # the store's path or URL: its runs' and temporary folders are beside it
    log: logging.Logger
    python: PythonJob | None  # run_worker's job, with its function

    @contextmanager
    def runner(self, store: Store) -> Iterator[Runner]:
        """The ready runner, on `store`; a command's temporary folder is removed after."""
        checked = self.checked
        memory_mb = checked.agent.memory_mb if checked.agent is not None else None
        config = runner_config(
            self.spec, labels=checked.labels, provider=checked.provider, memory_mb=memory_mb
        )
        function = checked.function
        if function is not None:
            python = self.python or PythonJob(execute=function)
            yield Runner(store, config, python, settings=self.settings, log=self.log)
            return
        worktrees = self._worktrees(store) if checked.worktrees is not None else None
        tmp = make_tmp(self.db, self.spec.name)  # the tasks' TMPDIR, removed when it stops
        tracer = None
        try:
            job = self._command(tmp, worktrees)
            agent = _agent(self)
            if checked.traced and agent is not None:
                tracer = tracing.start(os.environ, agent, worker=self.spec.name)
            yield Runner(store, config, job, settings=self.settings, log=self.log, tracer=tracer)
        finally:
            if tracer is not None:
                tracer.close()  # its last spans exported
            remove_tmp(tmp)

    def _command(self, tmp: str, worktrees: TaskWorktrees | None) -> Job:
        """The command job, in task worktrees with the verify step under `--worktree`."""
        declared = self.checked.agent.env if self.checked.agent is not None else ()
        env = _task_env(self.settings, self.db, self.log, declared=declared)
        command = _command_job(self, tmp, env=env)
        if worktrees is None:
            return command
        policy = self.settings.worktree
        verify = VerifyStep.of(
            policy.verify,
            timeout_s=policy.verify_timeout_s,
            grace_s=command.grace_s,
            base_env=env,
            retries=policy.verify_retries,
        )
        return WorktreeJob(job=command, worktrees=worktrees, verify=verify)

    def _worktrees(self, store: Store) -> TaskWorktrees:
        """Each task in its own git worktree (`--worktree`), in the repository checked."""
        assert self.checked.worktrees is not None
        return TaskWorktrees(
            store,
            self.checked.worktrees,
            worker_name=self.spec.name,
            base_ref=self.checked.base_ref,
            policy=self.settings.worktree,
            keep=self.spec.options.keep_worktrees,
            log=self.log,
        )


def prepare(
    spec: WorkerSpec, *, settings: Settings, db: str, python: PythonJob | None = None
) -> Assembly:
    """`spec` checked against the world (preflight: InvalidInput, exit 2; a missing tool,
    exit 3) and its tools logged; `python` is run_worker's job, in place of `--call`."""
    checked = preflight.check(
        spec.options,
        worker=spec.name,
        policy=settings.worktree,
        agents_folder=agents_dir(db),
        function=None if python is None else python.execute,
    )
    log = logger("corral.worker")  # checks CORRAL_LOG_LEVEL before the store is opened
    log_tools(log, checked.tools)
    return Assembly(spec=spec, checked=checked, settings=settings, db=db, log=log, python=python)


def _provider_env(settings: Settings, provider: str | None) -> dict[str, str]:
    """What `[providers.NAME] env` gives this worker's agents: as its orchestrator resolved
    it (PROVIDER_ENV_VARIABLE), or resolved here from this process's environment."""
    passed = os.environ.get(PROVIDER_ENV_VARIABLE)
    if passed is not None:
        resolved: dict[str, str] = json.loads(passed)
        return resolved
    return provider_env(settings, provider, os.environ)


def _task_env(
    settings: Settings, db: str, log: logging.Logger, *, declared: tuple[str, ...]
) -> dict[str, str]:
    """The environment tasks start from: this one through the allow-list and the secret
    filter (corral.foundation.task_env; `declared`: the agent profile's names), the names
    the filter withheld logged with the count not on the allow-list (never a value); the
    provider account's environment is added to agents' alone (`_provider_env`)."""
    policy = settings.env
    log_ignored(log, "worker", os.environ)
    environ = {k: v for k, v in os.environ.items() if k != PROVIDER_ENV_VARIABLE}
    sifted = policy.for_task(environ, declared)
    secrets = [name for name in sifted.withheld_names if sifted.withheld[name] != NOT_ALLOWED]
    if sifted.withheld:
        not_allowed = len(sifted.withheld) - len(secrets)
        names = ",".join(secrets) or None
        event(log, "worker.env_withheld", names=names, not_allowed=not_allowed)
    env = sifted.kept
    password = password_of(db)
    if password is not None and policy.grants("PGPASSWORD"):
        env["PGPASSWORD"] = password  # libpq's own channel; the URL tasks get has none
    return env


def _command_job(assembly: Assembly, tmp: str, *, env: dict[str, str]) -> CommandJob:
    """Each task's command as the options say, from `env`, its TMPDIR `tmp`."""
    options, checked, settings = assembly.spec.options, assembly.checked, assembly.settings
    workdir = options.workdir or None
    return CommandJob(
        argv=checked.argv,
        runs_dir=runs_dir(assembly.db),
        template=checked.template,
        prompt_arg=options.prompt_arg,
        prompt_arg_bare=options.prompt_arg_bare,
        workdir=workdir,
        workdir_root=None if settings.workdir_outside else os.path.abspath(workdir or "."),
        timeout_s=options.timeout_s,
        stall_timeout_s=options.stall_timeout_s,
        kill_stalled=options.kill_stalled,
        grace_s=options.grace_s,
        defer_s=options.defer_delay_s,
        extra_env={
            **_provider_env(settings, checked.provider),
            "TMPDIR": tmp,
            "CORRAL_WORKER_TMP": tmp,
        },
        base_env=env,
        agent=_agent(assembly),
        artifacts=options.artifacts,
        artifacts_max_bytes=options.artifacts_max_mb * MB,
        outbox=settings.files_mirror,
        sandbox=checked.sandbox,
        store_file=_sqlite_file(assembly.db),
    )


def _sqlite_file(db: str) -> str | None:
    """The file of a SQLite store (a path or sqlite:///), None for any other."""
    path = db.removeprefix("sqlite:///")
    return None if "://" in path else os.path.abspath(path)


def _agent(assembly: Assembly) -> AgentSetup | None:
    """How `--agent` runs, or None: the command is a plain one."""
    checked, settings, options = assembly.checked, assembly.settings, assembly.spec.options
    if checked.agent is None:
        return None
    return AgentSetup(
        profile=checked.agent,
        model=options.model or None,
        extra_args=options.agent_args,
        provider=checked.provider,
        resume=settings.agents_resume,
        park_s=settings.agents_park_s,
        park_min_s=settings.agents_park_min_s,
    )
