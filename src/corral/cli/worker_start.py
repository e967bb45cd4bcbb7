"""`corral worker start`: turn flags into a runner configuration and run it."""

from __future__ import annotations

import importlib
import os
import shlex
import shutil
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from corral.cli import parsing
from corral.cli.context import Context
from corral.errors import InvalidInput
from corral.git.task_worktrees import TaskWorktrees
from corral.git.worktrees import Worktrees
from corral.logs import logger
from corral.runtime.worker.command_job import CommandJob
from corral.runtime.worker.prompts import DEFAULT_TEMPLATE, load_template
from corral.runtime.worker.runner import PythonJob, Runner, RunnerConfig
from corral.runtime.worker.spawn import CommandNotFound
from corral.runtime.worker.tmp import make_tmp, remove_tmp
from corral.store.location import runs_dir

if TYPE_CHECKING:
    from corral.cli.context import Args


def start_worker(ctx: Context) -> int:
    """Build the runner from the flags and run it; returns its exit code."""
    ctx.long_running()
    a = ctx.args
    config = RunnerConfig(
        name=a.name,
        kinds=tuple(a.kind or ()),
        queues=tuple(a.queue or ()),
        labels=parsing.labels("label", a.label),
        concurrency=parsing.whole("concurrency", a.concurrency, minimum=1) or 1,
        max_tasks=parsing.whole("max_tasks", a.max_tasks, minimum=1),
        once=a.once,
        lease_s=parsing.positive_duration("lease", a.lease),
        shutdown_timeout_s=_duration("shutdown_timeout", a.shutdown_timeout, 300.0),
        batch=_batch(a),
    )
    command = _command_job(a, ctx.db) if a.exec is not None else None
    job = command if command is not None else _python_job(a.call)
    log = logger("corral.worker")  # checks CORRAL_LOG_LEVEL before the store is opened
    worktrees = _worktrees(ctx, a) if a.worktree else None
    if command is None:
        return Runner(
            ctx.store, config, job, settings=ctx.settings, worktrees=worktrees, log=log
        ).run()
    tmp = make_tmp(ctx.db, a.name)  # the tasks' TMPDIR, removed when the worker stops
    try:
        env = {**command.extra_env, "TMPDIR": tmp, "CORRAL_WORKER_TMP": tmp}
        job = replace(command, extra_env=env)
        return Runner(
            ctx.store, config, job, settings=ctx.settings, worktrees=worktrees, log=log
        ).run()
    finally:
        remove_tmp(tmp)


def _worktrees(ctx: Context, a: Args) -> TaskWorktrees:
    """Each task in its own git worktree (`--worktree`); git is checked before registering."""
    if a.exec is None:
        raise InvalidInput("worktree", "a command worker (--exec); --call runs in this process")
    policy = ctx.settings.worktree
    trees = Worktrees.open(a.workdir or os.getcwd(), policy)
    base = a.base or policy.base or trees.default_base()
    if trees.git.commit_of(base) is None:
        raise InvalidInput("base", "a branch or commit of the repository", base)
    return TaskWorktrees(
        ctx.store,
        trees,
        worker_name=a.name,
        base_ref=base,
        policy=policy,
        keep=a.keep_worktrees,
        log=logger("corral.worker"),
    )


def _batch(a: Args) -> int:
    """--batch: how many tasks a --call worker may claim at once (commands: one)."""
    batch = parsing.whole("batch", a.batch, minimum=1) or 1
    if batch > 1 and a.exec is not None:
        raise InvalidInput("batch", "1 with --exec (batches are for --call workers)", a.batch)
    return batch


def _duration(field: str, raw: str | None, default: float) -> float:
    value = parsing.duration(field, raw)
    return default if value is None else value


def _command_job(a: Args, db: str) -> CommandJob:
    try:
        argv = tuple(shlex.split(a.exec))
    except ValueError as exc:
        raise InvalidInput("exec", "a command line with balanced quotes", str(exc)) from None
    if not argv:
        raise InvalidInput("exec", "a command to run")
    found = shutil.which(argv[0])
    if found is None:
        raise CommandNotFound(f"command not found: {argv[0]}")
    return CommandJob(
        argv=(os.path.abspath(found), *argv[1:]),  # tasks may run in other working directories
        runs_dir=runs_dir(db),
        template=load_template(a.prompt_template) if a.prompt_template else DEFAULT_TEMPLATE,
        prompt_arg=a.prompt_arg,
        workdir=a.workdir,
        timeout_s=parsing.positive_duration("timeout", a.timeout),
        stall_timeout_s=parsing.positive_duration("stall_timeout", a.stall_timeout),
        kill_stalled=a.kill_stalled,
        grace_s=_duration("grace", a.grace, 5.0),
        defer_s=_duration("defer_delay", a.defer_delay, 900.0),
    )


def _python_job(target: str) -> PythonJob:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise InvalidInput("call", "MODULE:FUNCTION, e.g. mypkg.tasks:handle", target)
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # as `python -m` does: modules beside the caller import
    try:
        function = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise InvalidInput("call", "an importable MODULE:FUNCTION", f"{target} ({exc})") from None
    if not callable(function):
        raise InvalidInput("call", "a callable", target)
    return PythonJob(execute=function)
