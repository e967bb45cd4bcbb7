"""Command tasks: the `--exec` command run once per task, through the executor.

The command line is split with shlex once, when the runner starts; the prompt goes to
the child's stdin, or as one extra argument with `prompt_arg`, after `--` (unless
`prompt_arg_bare`) so that no title can become an option, and no task field is ever read
by a shell. The child's environment is the runner's plus `CORRAL_TASK_ID`,
`CORRAL_WORKER_ID`, `CORRAL_RUN_ID`, `CORRAL_CLAIM_TOKEN` and `CORRAL_DB` (without its
password: `worker start` adds `PGPASSWORD` only when `env.allow` names it), so an agent
can call `corral done` itself, fenced by its token (with `[files] mirror`, `CORRAL_OUTBOX`
too: a file of lines its runner takes in, outbox.py), and OTEL_RESOURCE_ATTRIBUTES
with the task's and run's ids (tracing.py), so an agent's own telemetry joins the run's
span. Exit status 0 is success, 75 defers the task, anything else fails it with the tail
of stderr. A last stdout line that is a JSON object with a `usage` object is recorded as
the run's usage. With a sandbox (`--sandbox`, sandbox.py) the command runs inside it,
started by its engine.

As a job (jobs.py): each run is prepared when its task is claimed (argv, prompt,
environment, paths: what its run record says), performed through the executor, and
closed with nothing to release. A background thread keeps spare output files ready
(spares.py) while the worker runs.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from corral.foundation import documents, filemodes
from corral.foundation.clock import Clock
from corral.foundation.errors import CorralError, InvalidInput
from corral.foundation.logs import event
from corral.model.artifacts import MB
from corral.model.budgets import Budget, budget_of
from corral.model.exchange import Held, RunStart
from corral.model.sandboxes import Access
from corral.model.tasks import Task
from corral.model.waiting import WaitKind
from corral.model.waiting import reason as wait_text
from corral.runtime.worker.agent_runs import (
    BUDGET_STOP,
    LIMIT_STOP,
    AgentSetup,
    Resume,
    StreamWatch,
    Verdict,
    budget_watch,
    continuation_prompt,
    resume_of,
    wait_reason,
)
from corral.runtime.worker.agent_streams import last_usage
from corral.runtime.worker.artifacts import keep_artifacts
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.executor import CommandResult, CommandSpec, run_command
from corral.runtime.worker.jobs import Opened, Stop
from corral.runtime.worker.launch import refused_launch
from corral.runtime.worker.outbox import Outbox, outbox_path
from corral.runtime.worker.prompts import DEFAULT_TEMPLATE, render_prompt
from corral.runtime.worker.reports import DEFER_EXIT_CODE, Done, Ending
from corral.runtime.worker.sandbox import Sandbox, settle_objects
from corral.runtime.worker.spares import Spares
from corral.runtime.worker.tracing import RESOURCE_VARIABLE, agent_resource
from corral.store.location import is_inside
from corral.store.urls import without_password

STALLED_REASON = "stalled: no output for the stall timeout"
# The result of an agent not started because a cap was reached already (StreamWatch.reached).
NOT_STARTED = CommandResult(
    ending=Ending.STOPPED, exit_code=None, duration_s=0.0, stalled=False, stderr_tail=""
)


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
    agent: AgentSetup | None = None  # --agent: the command is the agent's (agent_runs.py)
    changes_note: str | None = None  # in a worktree after request-changes: the reviewer's note
    verify_note: str | None = None  # in a worktree after its verify step failed: the failure
    artifacts: tuple[str, ...] = ()  # globs of files kept from each run (artifacts.py)
    artifacts_max_bytes: int = 100 * MB
    # `[files] mirror`: each run's agent gets CORRAL_OUTBOX, a file taken in as it runs.
    outbox: bool = False
    sandbox: Sandbox | None = None  # `--sandbox`: where each command runs (sandbox.py)
    store_file: str | None = None  # a SQLite store's file: kept out of the sandbox

    def begin(self, place: Workplace) -> CommandRuns:
        """This job's runs for the worker `place` describes (jobs.Job)."""
        return CommandRuns(self, place)


@dataclass(frozen=True, slots=True, kw_only=True)
class Prepared:
    """One task's command, ready to start; what the run record keeps."""

    spec: CommandSpec
    prompt: str
    task_id: str
    prompt_file: str | None = None  # an agent that reads its prompt from a file: written at start
    token: int = 0  # the claim's fencing token: a message line of its outbox must name it
    outbox_path: str | None = None  # its outbox (CORRAL_OUTBOX), made when it starts
    resumed: Resume | None = None  # the session this run of an agent continues
    budget: Budget = field(default_factory=Budget)  # its task's caps: an agent's run stops there
    queue: str = "default"  # its task's queue, whose day caps it counts against

    def run_start(self, base_commit: str | None = None, site: str | None = None) -> RunStart:
        """What the run record says of this command (paths made absolute)."""
        spec = self.spec
        return RunStart(
            command=spec.argv,
            cwd=os.path.abspath(spec.cwd),
            prompt=self.prompt,
            transcript_path=os.path.abspath(spec.transcript_path),
            stderr_path=os.path.abspath(spec.stderr_path),
            base_commit=base_commit,
            site=site,
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
                namespace=self._place.store.namespace,
            )
        except Exception as exc:  # must not raise in the claim's transaction: perform does
            return Opened(start=self.start, prepared=exc)
        return Opened(start=prepared.run_start(), prepared=prepared)

    def perform(self, held: Held, opened: Opened[Prepared | Exception], stop: Stop) -> Done:
        """Run the prepared command to its end (a failure to prepare it raises here); an
        agent's resumes its session, when it can (agent_runs.py)."""
        if isinstance(opened.prepared, Exception):
            raise opened.prepared
        prepared, run_id = opened.prepared, held.opened_run()
        if self._job.agent is not None:
            prepared = self.resumed(self._job, held, prepared)
            if prepared.resumed is not None:
                self._place.store.runs.set_run_start(run_id, prepared.run_start())
        return self.run(self._job, run_id, prepared, stop)

    def resumed(self, job: CommandJob, held: Held, prepared: Prepared) -> Prepared:
        """`prepared` as the run of an agent that resumes its task's session, if it does."""
        assert job.agent is not None
        resume = resume_of(self._place.store, job.agent, held.task, prepared.spec.cwd)
        if resume is None:
            return prepared
        return prepare(
            job,
            held.task,
            token=held.token,
            run_id=held.opened_run(),
            worker_id=self._place.worker_id,
            db=self._place.store.url,
            namespace=self._place.store.namespace,
            resume=resume,
        )

    def run(self, job: CommandJob, run_id: str, prepared: Prepared, stop: Stop) -> Done:
        """Run `prepared`, a command of `job` (this one, or as a worktree changed it), if
        its claim is still held when it is about to start (launch.py); then the objects a
        sandboxed agent wrote (this run's, or a killed runner's run's) brought into the
        repository, before corral's git reads its work."""
        try:
            return self._run(job, run_id, prepared, stop)
        finally:
            self._settle_objects(job.workdir or prepared.spec.cwd, run_id)

    def _settle_objects(self, root: str, run_id: str) -> None:
        """sandbox.settle_objects, logged; a failure leaves the folder listed as an
        alternate (the repository still reads every object) for the next run or the
        clean-up to finish."""
        try:
            settled = settle_objects(root)
        except (OSError, CorralError) as exc:
            event(self._place.log, "run.objects_unsettled", logging.WARNING, run_id=run_id,
                  error=str(exc))  # fmt: skip
            return
        if settled is not None and settled.refused:
            event(self._place.log, "run.objects_refused", logging.WARNING, run_id=run_id,
                  refused=list(settled.refused))  # fmt: skip

    def _run(self, job: CommandJob, run_id: str, prepared: Prepared, stop: Stop) -> Done:
        store, place = self._place.store, self._place
        watch = None
        if job.agent is not None:
            watch = StreamWatch(
                place,
                job.agent,
                run_id=run_id,
                task_id=prepared.task_id,
                transcript_path=prepared.spec.transcript_path,
                budget=budget_watch(
                    place,
                    job.agent,
                    task_id=prepared.task_id,
                    queue=prepared.queue,
                    budget=prepared.budget,
                ),
            )
            reached = watch.reached()  # a cap reached already: the agent is not started
            if reached is not None:
                return _over_budget(NOT_STARTED, reached, reached.over_budget or "")
        not_started = refused_launch(place, run_id, stop)
        if not_started is not None:
            return not_started
        if job.agent is not None:
            resumed = prepared.resumed
            store.runs.record_agent_run(
                run_id,
                agent=job.agent.profile.name,
                resumed_from=None if resumed is None else resumed.run_id,
                session_id=None if resumed is None else resumed.session_id,
            )
        outbox = self._outbox(prepared)  # first: made, or the run fails before it watches
        shipper, spec = place.shipper, prepared.spec
        if shipper is not None:
            shipper.watch(
                run_id, transcript_path=spec.transcript_path, stderr_path=spec.stderr_path
            )
        try:
            return run_prepared(
                job,
                prepared,
                clock=place.clock,
                stop=stop if outbox is None else _taking_in(outbox, stop),
                on_stall=lambda: store.runs.mark_waiting(run_id, STALLED_REASON),
                on_resume=lambda: store.runs.record_progress(run_id, None),
                spares=self._spares,
                watch=watch,
            )
        finally:
            if outbox is not None:
                outbox.finish()  # before the run is reported: its last lines decide first
            if shipper is not None:
                shipper.finish(run_id)
            if job.artifacts:
                keep_artifacts(place, job, run_id, prepared.spec)

    def _outbox(self, prepared: Prepared) -> Outbox | None:
        """The run's outbox, made empty now, if it has one."""
        if prepared.outbox_path is None:
            return None
        filemodes.make_dirs(os.path.dirname(prepared.outbox_path))
        run_id = prepared.spec.run_id
        return Outbox(
            prepared.outbox_path,
            place=self._place,
            task_id=prepared.task_id,
            run_id=run_id,
            token=prepared.token,
        )

    def close(self, held: Held, opened: Opened[Prepared | Exception]) -> None:
        """Nothing to release: a prepared command is only data."""

    def end(self) -> None:
        """Stop making spare output files, and remove the pair left."""
        self._spares.close()


def prepare(
    job: CommandJob,
    task: Task,
    *,
    token: int,
    run_id: str,
    worker_id: str,
    db: str,
    namespace: str,
    resume: Resume | None = None,
) -> Prepared:
    """The argv, prompt, environment, working directory and capture paths for `task`
    (of an agent: as its profile says, resuming `resume`'s session when given)."""
    if resume is not None:
        text = continuation_prompt(task, job.changes_note, job.verify_note)
    else:
        text = render_prompt(task, job.template)
    # No NUL: neither an argv nor the run row's text column can hold one
    # (corral.foundation.documents).
    prompt = documents.without_nul(text)
    prompt_file = None
    if job.agent is not None:
        argv, on_stdin, prompt_file = _agent_argv(job, job.agent, prompt, run_id, resume)
    else:
        separator = () if job.prompt_arg_bare else ("--",)
        argv = (*job.argv, *separator, prompt) if job.prompt_arg else job.argv
        on_stdin = not job.prompt_arg
    env = {
        **job.base_env,
        **job.extra_env,
        "CORRAL_TASK_ID": task.id,
        "CORRAL_WORKER_ID": worker_id,
        "CORRAL_RUN_ID": run_id,
        "CORRAL_CLAIM_TOKEN": str(token),
        "CORRAL_DB": without_password(db),  # the password: PGPASSWORD, if allowed
        "CORRAL_NAMESPACE": namespace,
    }
    # The agent's own telemetry joins the run's (tracing.py).
    env[RESOURCE_VARIABLE] = agent_resource(env.get(RESOURCE_VARIABLE), task_id=task.id,
                                            run_id=run_id)  # fmt: skip
    outbox = outbox_path(job.runs_dir, run_id) if job.outbox else None
    if outbox is not None:
        env["CORRAL_OUTBOX"] = outbox
    workdir = task.payload.get("workdir")
    cwd = _allowed(workdir, job) if isinstance(workdir, str) else (job.workdir or os.getcwd())
    wrapper: tuple[str, ...] = ()
    if job.sandbox is not None:
        own = {outbox: Access.WRITABLE} if outbox is not None else {}
        if prompt_file is not None:
            own[prompt_file] = Access.READ_ONLY
        wrapper, env = job.sandbox.contain(
            argv[0],
            root=job.workdir or cwd,
            cwd=cwd,
            env=env,
            state_dir=os.path.dirname(job.runs_dir),
            files=own,
            run_id=run_id,
            store_file=job.store_file,
        )
    spec = CommandSpec(
        argv=argv,
        stdin_text=prompt if on_stdin else None,
        env=env,
        cwd=cwd,
        wrapper=wrapper,
        transcript_path=os.path.join(job.runs_dir, f"{run_id}.jsonl"),
        stderr_path=os.path.join(job.runs_dir, f"{run_id}.stderr"),
        run_id=run_id,
        timeout_s=task.timeout_s or job.timeout_s,
        stall_timeout_s=job.stall_timeout_s,
        kill_stalled=job.kill_stalled,
        grace_s=job.grace_s,
    )
    return Prepared(
        spec=spec,
        prompt=prompt,
        task_id=task.id,
        budget=budget_of(task.payload),
        queue=task.queue,
        prompt_file=prompt_file,
        resumed=resume,
        token=token,
        outbox_path=outbox,
    )


def _agent_argv(
    job: CommandJob, agent: AgentSetup, prompt: str, run_id: str, resume: Resume | None
) -> tuple[tuple[str, ...], bool, str | None]:
    """(an agent's argv, whether its prompt goes to stdin, the prompt file it reads)."""
    profile = agent.profile
    prompt_file = None
    if profile.prompt == "file":
        prompt_file = os.path.join(job.runs_dir, f"{run_id}.prompt")
    argv = profile.argv(
        model=agent.model,
        extra=agent.extra_args,
        session_id=None if resume is None else resume.session_id,
        prompt_file=prompt_file,
    )
    if profile.prompt == "arg":
        return (*argv, "--", prompt), False, None  # `--`: no title can become an option
    return argv, profile.prompt == "stdin", prompt_file


def _taking_in(outbox: Outbox, stop: Stop) -> Stop:
    """`stop`, taking in the outbox's new lines first at each of the executor's polls."""

    def taking_in() -> str | None:
        outbox.take_in()
        return stop()

    return taking_in


def run_prepared(
    job: CommandJob,
    prepared: Prepared,
    *,
    clock: Clock,
    stop: Callable[[], str | None],
    on_stall: Callable[[], None],
    on_resume: Callable[[], None],
    spares: Spares | None = None,
    watch: StreamWatch | None = None,
) -> Done:
    """Run the command to its end and describe it (an agent's, from its stream: `watch`)."""
    filemodes.make_dirs(job.runs_dir)
    if prepared.prompt_file is not None:
        _write_private(prepared.prompt_file, prepared.prompt)
    reasons: list[str] = []

    def stop_and_remember() -> str | None:
        reason = stop() or (watch.poll() if watch is not None else None)
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
    stop_reason = reasons[-1] if reasons else None
    if watch is not None:
        return _agent_done(job, prepared, result, stop_reason, watch)
    return _done(job, prepared, result, stop_reason, last_usage(prepared.spec.transcript_path))


def _write_private(path: str, text: str) -> None:
    """Write `text` to a new file only its owner reads (corral.foundation.filemodes)."""
    fd = filemodes.open_file(path, os.O_WRONLY | os.O_TRUNC)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _agent_done(
    job: CommandJob,
    prepared: Prepared,
    result: CommandResult,
    stop_reason: str | None,
    watch: StreamWatch,
) -> Done:
    """An agent's run described from its stream: its usage, a limit (the task deferred
    until the reset, no attempt counted), its own verdict, and a wait for a person when
    it succeeded but was refused tools or asked a question; its session and model (for
    its span, tracing.py)."""
    verdict = watch.finish(
        exit_code=result.exit_code, stderr_tail=result.stderr_tail, ending=str(result.ending)
    )
    facts, agent = verdict.facts, job.agent
    done = _judged(job, prepared, result, stop_reason, verdict)
    model = (agent.model if agent is not None else None) or facts.model
    return replace(done, session_id=facts.session_id, model=model)


def _judged(
    job: CommandJob,
    prepared: Prepared,
    result: CommandResult,
    stop_reason: str | None,
    verdict: Verdict,
) -> Done:
    """An agent's run as its watch's `verdict` decides it (`_agent_done`)."""
    usage = verdict.spent  # the agent's totals, else its streamed usage (a run cut short)
    if verdict.limit_until is not None:
        return Done(
            ending=result.ending,
            success=False,
            exit_code=result.exit_code,
            error=f"usage limit: {verdict.limit_reason}",
            usage=usage,
            stop_reason=LIMIT_STOP,
            defer_until=verdict.limit_until,
            defer_reason=f"usage limit: {verdict.limit_reason}",
        )
    if verdict.over_budget is not None:
        return _over_budget(result, verdict, verdict.over_budget)
    done = _done(job, prepared, result, stop_reason, usage)
    if not done.success:
        return done
    if verdict.facts.error is not None:  # the agent's own word wins
        return replace(done, success=False, error=f"the agent failed: {verdict.stop_reason}")
    waits = wait_reason(verdict.facts)  # refused tools, or a question: a person must act
    if waits is not None:
        return replace(done, success=False, wait_reason=waits)
    return done


def _over_budget(result: CommandResult, verdict: Verdict, over: str) -> Done:
    """A run stopped at a budget, its worktree and session kept: at its task's, the task
    waits for a person (`answer --budget`); at a day cap, it is deferred until the cap
    lifts, no attempt counted."""
    reason = wait_text(WaitKind.BUDGET, over)
    stopped = Done(
        ending=result.ending,
        success=False,
        exit_code=result.exit_code,
        usage=verdict.spent,
        stop_reason=BUDGET_STOP,
    )
    if verdict.over_until is not None:
        return replace(stopped, defer_until=verdict.over_until, defer_reason=reason)
    return replace(stopped, wait_reason=reason)


def _done(
    job: CommandJob,
    prepared: Prepared,
    result: CommandResult,
    stop_reason: str | None,
    usage: dict[str, Any] | None,
) -> Done:
    ending = result.ending
    code = result.exit_code
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
