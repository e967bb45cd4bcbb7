"""Command tasks: the `--exec` command run once per task, through the executor.

The command line is split with shlex once, when the runner starts; the prompt goes to
the child's stdin, or as one extra argument with `prompt_arg`, after `--` (unless
`prompt_arg_bare`) so that no title can become an option, and no task field is ever read
by a shell. The child's environment is the runner's plus `CORRAL_TASK_ID`,
`CORRAL_WORKER_ID`, `CORRAL_RUN_ID`, `CORRAL_CLAIM_TOKEN` and `CORRAL_DB` (without its
password: `worker start` adds `PGPASSWORD` only when `env.allow` names it), so an agent
can call `corral done` itself, fenced by its token. Exit status 0 is success, 75
defers the task, anything else fails it with the tail of stderr. A last stdout line
that is a JSON object with a `usage` object is recorded as the run's usage.

As a job (jobs.py): each run is prepared when its task is claimed (argv, prompt,
environment, paths: what its run record says), performed through the executor, and
closed with nothing to release. A background thread keeps spare output files ready
(spares.py) while the worker runs.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from corral import documents, filemodes
from corral.clock import Clock
from corral.errors import InvalidInput
from corral.model.batches import Held, RunStart
from corral.model.tasks import Task
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.executor import CommandResult, CommandSpec, run_command
from corral.runtime.worker.jobs import Opened, Stop
from corral.runtime.worker.launch import refused_launch
from corral.runtime.worker.outcome import DEFER_EXIT_CODE, Done, Ending
from corral.runtime.worker.prompts import DEFAULT_TEMPLATE, render_prompt
from corral.runtime.worker.spares import Spares
from corral.store.location import is_inside
from corral.store.urls import without_password

STALLED_REASON = "stalled: no output for the stall timeout"


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandJob:
    """How every task of this runner is run as a command."""

    argv: tuple[str, ...]
    runs_dir: str
    template: str = DEFAULT_TEMPLATE
    prompt_arg: bool = False
    # With prompt_arg: `--` goes before the prompt, so a title such as `--force` is never
    # taken for an option; `prompt_arg_bare` leaves it out, for a tool that refuses `--`.
    prompt_arg_bare: bool = False
    workdir: str | None = None
    # A payload's `workdir` must lie inside this folder (or `workdir`), unless None: the
    # runner's workdir when it started, or None with `tasks.workdir_outside`.
    workdir_root: str | None = None
    timeout_s: float | None = None
    stall_timeout_s: float | None = None
    kill_stalled: bool = False
    grace_s: float = 5.0
    defer_s: float = 900.0
    extra_env: dict[str, str] = field(default_factory=dict)
    # The environment commands start from: the runner's, read once (not once per task).
    base_env: dict[str, str] = field(default_factory=lambda: dict(os.environ))

    def begin(self, place: Workplace) -> CommandRuns:
        """This job's runs for the worker `place` describes (jobs.Job)."""
        return CommandRuns(self, place)


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """One task's command, ready to start; what the run record keeps."""

    spec: CommandSpec
    prompt: str

    def run_start(self, base_commit: str | None = None) -> RunStart:
        """What the run record says of this command (paths made absolute)."""
        spec = self.spec
        return RunStart(
            command=spec.argv,
            cwd=os.path.abspath(spec.cwd),
            prompt=self.prompt,
            transcript_path=os.path.abspath(spec.transcript_path),
            stderr_path=os.path.abspath(spec.stderr_path),
            base_commit=base_commit,
        )


class CommandRuns:
    """The runs of a command job for one worker (jobs.Runs): prepared when claimed."""

    def __init__(self, job: CommandJob, place: Workplace) -> None:
        self._job, self._place = job, place
        self._spares = Spares(job.runs_dir)  # output files made ahead, while commands run
        self.start = RunStart(command=job.argv, cwd=os.getcwd())

    def open(self, task: Task, token: int, run_id: str) -> Opened[Prepared | Exception]:
        """The command prepared for `task`, or what kept it from being prepared."""
        try:
            prepared = prepare(
                self._job,
                task,
                token=token,
                run_id=run_id,
                worker_id=self._place.worker_id,
                db=self._place.store.url,
            )
        except Exception as exc:  # must not raise in the claim's transaction: perform does
            return Opened(start=self.start, prepared=exc)
        return Opened(start=prepared.run_start(), prepared=prepared)

    def perform(self, held: Held, opened: Opened[Prepared | Exception], stop: Stop) -> Done:
        """Run the prepared command to its end (a failure to prepare it raises here)."""
        if isinstance(opened.prepared, Exception):
            raise opened.prepared
        return self.run(self._job, held.opened_run(), opened.prepared, stop)

    def run(self, job: CommandJob, run_id: str, prepared: Prepared, stop: Stop) -> Done:
        """Run `prepared`, a command of `job` (this one, or as a worktree changed it), if
        its claim is still held when it is about to start (launch.py)."""
        store = self._place.store
        not_started = refused_launch(self._place, run_id, stop)
        if not_started is not None:
            return not_started
        return run_prepared(
            job,
            prepared,
            clock=self._place.clock,
            stop=stop,
            on_stall=lambda: store.mark_waiting(run_id, STALLED_REASON),
            on_resume=lambda: store.record_progress(run_id, None),
            spares=self._spares,
        )

    def close(self, held: Held, opened: Opened[Prepared | Exception]) -> None:
        """Nothing to release: a prepared command is only data."""

    def end(self) -> None:
        """Stop making spare output files, and remove the pair left."""
        self._spares.close()


def prepare(
    job: CommandJob, task: Task, *, token: int, run_id: str, worker_id: str, db: str
) -> Prepared:
    """The argv, prompt, environment, working directory and capture paths for `task`."""
    # No NUL: neither an argv nor the run row's text column can hold one (corral.documents).
    prompt = documents.without_nul(render_prompt(task, job.template))
    separator = () if job.prompt_arg_bare else ("--",)
    argv = (*job.argv, *separator, prompt) if job.prompt_arg else job.argv
    env = {
        **job.base_env,
        **job.extra_env,
        "CORRAL_TASK_ID": task.id,
        "CORRAL_WORKER_ID": worker_id,
        "CORRAL_RUN_ID": run_id,
        "CORRAL_CLAIM_TOKEN": str(token),
        "CORRAL_DB": without_password(db),  # the password: PGPASSWORD, if allowed
    }
    workdir = task.payload.get("workdir")
    spec = CommandSpec(
        argv=argv,
        stdin_text=None if job.prompt_arg else prompt,
        env=env,
        cwd=_allowed(workdir, job) if isinstance(workdir, str) else (job.workdir or os.getcwd()),
        transcript_path=os.path.join(job.runs_dir, f"{run_id}.jsonl"),
        stderr_path=os.path.join(job.runs_dir, f"{run_id}.stderr"),
        run_id=run_id,
        timeout_s=task.timeout_s or job.timeout_s,
        stall_timeout_s=job.stall_timeout_s,
        kill_stalled=job.kill_stalled,
        grace_s=job.grace_s,
    )
    return Prepared(spec=spec, prompt=prompt)


def run_prepared(
    job: CommandJob,
    prepared: Prepared,
    *,
    clock: Clock,
    stop: Callable[[], str | None],
    on_stall: Callable[[], None],
    on_resume: Callable[[], None],
    spares: Spares | None = None,
) -> Done:
    """Run the command to its end and describe it."""
    filemodes.make_dirs(job.runs_dir)
    reasons: list[str] = []

    def stop_and_remember() -> str | None:
        reason = stop()
        if reason:
            reasons.append(reason)
        return reason

    result = run_command(
        prepared.spec,
        clock=clock,
        stop=stop_and_remember,
        on_stall=on_stall,
        on_resume=on_resume,
        spares=spares,
    )
    return _done(job, prepared, result, reasons[-1] if reasons else None)


def _done(
    job: CommandJob, prepared: Prepared, result: CommandResult, stop_reason: str | None
) -> Done:
    ending = result.ending
    code = result.exit_code
    usage = last_usage(prepared.spec.transcript_path)
    if ending is Ending.EXITED and code == DEFER_EXIT_CODE:
        return Done(ending=ending, success=False, exit_code=code, usage=usage, defer_s=job.defer_s)
    if ending is Ending.EXITED and code == 0:
        return Done(ending=ending, success=True, exit_code=0, usage=usage)
    return Done(
        ending=ending,
        success=False,
        exit_code=code,
        error=_error(ending, code, result, prepared.spec.timeout_s),
        usage=usage,
        stop_reason=stop_reason,
    )


def _error(ending: Ending, code: int | None, result: CommandResult, timeout_s: float | None) -> str:
    tail = result.stderr_tail.strip()
    if ending is Ending.TIMEOUT:
        head = f"timed out after {timeout_s:g} s"
    elif ending is Ending.STALLED:
        head = "stalled: no output for the stall timeout"
    elif ending is Ending.STOPPED:
        head = "stopped by the runner"
    else:
        head = f"exited with status {code}"
    return f"{head}: {tail}" if tail else head


def last_usage(path: str, window: int = 65536) -> dict[str, Any] | None:
    """The `usage` object of the transcript's last line, when that line is JSON."""
    try:
        size = os.stat(path).st_size
        if not size:  # a command that printed nothing: one stat, no open
            return None
        with open(path, "rb") as handle:
            handle.seek(max(0, size - window))
            lines = handle.read().decode("utf-8", "replace").strip().splitlines()
    except OSError:
        return None
    if not lines:
        return None
    try:
        last = json.loads(lines[-1])
    except ValueError:
        return None
    usage = last.get("usage") if isinstance(last, dict) else None
    return usage if isinstance(usage, dict) else None


def _allowed(workdir: str, job: CommandJob) -> str:
    """A payload's `workdir`, if it lies inside the worker's workdir (or the task's
    worktree), symbolic links resolved; else InvalidInput, which fails the task."""
    roots = [root for root in (job.workdir_root, job.workdir) if root is not None]
    if job.workdir_root is None or any(is_inside(workdir, root) for root in roots):
        return workdir
    raise InvalidInput(
        "workdir",
        f"a folder inside {job.workdir_root} (or set tasks.workdir_outside = true)",
        workdir,
    )
