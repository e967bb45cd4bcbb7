"""`corral worker start`: turn flags into a runner configuration and run it.

The worker options are parsed as the pool's are (cli/worker_flags.py) and checked by the
pool's check (runtime/worker/preflight.py) before the worker registers.
"""

from __future__ import annotations

import json
import logging
import os

from corral.agents import agents_dir
from corral.cli import parsing, worker_flags
from corral.cli.context import Context
from corral.git.task_worktrees import TaskWorktrees
from corral.logs import event, logger
from corral.model.artifacts import MB
from corral.policies import WorkerOptions
from corral.runtime.worker import preflight
from corral.runtime.worker.agent_runs import AgentSetup
from corral.runtime.worker.command_job import CommandJob
from corral.runtime.worker.runner import PythonJob, Runner, RunnerConfig
from corral.runtime.worker.tmp import make_tmp, remove_tmp
from corral.runtime.worker.tools import log_tools
from corral.settings import Settings
from corral.store.location import path_component, runs_dir
from corral.store.urls import password_of
from corral.usage import PROVIDER_ENV_VARIABLE, provider_env

SHUTDOWN_TIMEOUT_S = 300.0


def start_worker(ctx: Context) -> int:
    """Build the runner from the flags and run it; returns its exit code."""
    ctx.long_running()
    a = ctx.args
    path_component("name", a.name)  # its temporary directory and log are named after it
    # From the defaults, not the settings in force: [pool] keys are for the pool's workers.
    options = Settings().with_flags(worker_flags.given(a)).pool.options
    checked = preflight.check(
        options, worker=a.name, policy=ctx.settings.worktree, agents_folder=agents_dir(ctx.db)
    )
    shutdown_s = parsing.duration("shutdown_timeout", a.shutdown_timeout)
    config = RunnerConfig(
        name=a.name,
        kinds=options.kinds,
        queues=options.queues,
        labels=checked.labels,
        version=options.version,
        concurrency=options.concurrency,
        max_tasks=options.max_tasks,
        once=a.once,
        lease_s=options.lease_s,
        shutdown_timeout_s=SHUTDOWN_TIMEOUT_S if shutdown_s is None else shutdown_s,
        batch=options.batch,
        provider=checked.provider,
    )
    log = logger("corral.worker")  # checks CORRAL_LOG_LEVEL before the store is opened
    log_tools(log, checked.tools)
    worktrees = _worktrees(ctx, options, checked) if checked.worktrees is not None else None
    if checked.function is not None:
        job = PythonJob(execute=checked.function)
        return Runner(
            ctx.store, config, job, settings=ctx.settings, worktrees=worktrees, log=log
        ).run()
    tmp = make_tmp(ctx.db, a.name)  # the tasks' TMPDIR, removed when the worker stops
    try:
        command = _command_job(options, checked, ctx, tmp, env=_task_env(ctx, log))
        return Runner(
            ctx.store, config, command, settings=ctx.settings, worktrees=worktrees, log=log
        ).run()
    finally:
        remove_tmp(tmp)


def _worktrees(ctx: Context, options: WorkerOptions, checked: preflight.Checked) -> TaskWorktrees:
    """Each task in its own git worktree (`--worktree`), in the repository checked."""
    assert checked.worktrees is not None
    return TaskWorktrees(
        ctx.store,
        checked.worktrees,
        worker_name=ctx.args.name,
        base_ref=checked.base_ref,
        policy=ctx.settings.worktree,
        keep=options.keep_worktrees,
        log=logger("corral.worker"),
    )


def _provider_env(ctx: Context, provider: str | None) -> dict[str, str]:
    """What `[providers.NAME] env` gives this worker's agents: as its orchestrator resolved
    it (PROVIDER_ENV_VARIABLE), or resolved here from this process's environment."""
    passed = os.environ.get(PROVIDER_ENV_VARIABLE)
    if passed is not None:
        resolved: dict[str, str] = json.loads(passed)
        return resolved
    return provider_env(ctx.settings, provider, os.environ)


def _task_env(ctx: Context, log: logging.Logger) -> dict[str, str]:
    """The environment tasks start from: this one, filtered as the pool's workers' is
    (`env.deny`), the names withheld logged (never their values); the provider account's
    environment is added to agents' alone (`_provider_env`), never passed on as it came."""
    policy = ctx.settings.env
    environ = {k: v for k, v in os.environ.items() if k != PROVIDER_ENV_VARIABLE}
    env, withheld = policy.split(environ)
    if withheld:
        event(log, "worker.env_withheld", names=",".join(withheld))
    password = password_of(ctx.db)
    if password is not None and policy.allows("PGPASSWORD"):
        env["PGPASSWORD"] = password  # libpq's own channel; the URL tasks get has none
    return env


def _command_job(
    options: WorkerOptions,
    checked: preflight.Checked,
    ctx: Context,
    tmp: str,
    *,
    env: dict[str, str],
) -> CommandJob:
    workdir = options.workdir or None
    return CommandJob(
        argv=checked.argv,
        runs_dir=runs_dir(ctx.db),
        template=checked.template,
        prompt_arg=options.prompt_arg,
        prompt_arg_bare=options.prompt_arg_bare,
        workdir=workdir,
        workdir_root=None if ctx.settings.workdir_outside else os.path.abspath(workdir or "."),
        timeout_s=options.timeout_s,
        stall_timeout_s=options.stall_timeout_s,
        kill_stalled=options.kill_stalled,
        grace_s=options.grace_s,
        defer_s=options.defer_delay_s,
        extra_env={
            **_provider_env(ctx, checked.provider),
            "TMPDIR": tmp,
            "CORRAL_WORKER_TMP": tmp,
        },
        base_env=env,
        agent=_agent(options, checked, ctx),
        artifacts=options.artifacts,
        artifacts_max_bytes=options.artifacts_max_mb * MB,
    )


def _agent(options: WorkerOptions, checked: preflight.Checked, ctx: Context) -> AgentSetup | None:
    """How `--agent` runs, or None: the command is a plain one."""
    if checked.agent is None:
        return None
    return AgentSetup(
        profile=checked.agent,
        model=options.model or None,
        extra_args=options.agent_args,
        provider=checked.provider,
        resume=ctx.settings.agents_resume,
        park_s=ctx.settings.agents_park_s,
        park_min_s=ctx.settings.agents_park_min_s,
    )
