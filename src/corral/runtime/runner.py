"""The worker runner: register, heartbeat, claim, run, report, and shut down cleanly.

    start ── recover dead incarnations of this name on this host (their claims, at once)
          ── register ── heartbeat thread ── N slots, each:
               claim_next (only its kinds) ─none─► wait, backing off with jitter (0.05 s .. 2 s),
                   cut short when a task becomes ready (PostgreSQL: LISTEN/NOTIFY)
                   │
                   └─► start run record ─► command or Python function ─► one report:
                        success: complete · exit 75: defer · shutdown: release ·
                        claim lost: nothing (the token is stale) · else: fail (retry policy)
    SIGTERM / SIGINT ─► stop claiming, let running tasks finish within shutdown_timeout_s,
                        then stop them and release their claims ─► deregister ─► exit 0
    second signal, or SIGQUIT ─► stop running tasks now (claims released) ─► exit 0

Exit codes (seed 003): 0 clean exit; 1 the task of `--once` did not succeed, or the store
declared this worker dead; 2 configuration error; 3 a tool (the command, the store) is
unavailable. A drained worker finishes what it holds and exits 0.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, TypeVar

import psutil

from corral import queue, reconciler, registry
from corral.clock import Clock, SystemClock
from corral.errors import (
    CorralError,
    InvalidTransition,
    Refused,
    StaleToken,
    StoreError,
    WorkerUnavailable,
)
from corral.ids import RUN_PREFIX, new_id
from corral.leases import Claim
from corral.logs import event, logger
from corral.runs import NewRun, RunOutcome
from corral.runtime import command_task
from corral.runtime.command_task import CommandJob
from corral.runtime.executor import end_marked_processes
from corral.runtime.heartbeat import Heartbeat
from corral.runtime.outcome import Done, Ending
from corral.runtime.pytask import Execute, TaskContext, run_callable
from corral.runtime.task_worktrees import TaskWorktrees
from corral.settings import Settings
from corral.store import Store
from corral.tasks import Task
from corral.workers import WATCHED, NewWorker

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
REPORT_RETRIES = 5  # store calls after a run, tried again while the store is unavailable
T = TypeVar("T")
_FAILED = {Ending.TIMEOUT: RunOutcome.TIMEOUT, Ending.STALLED: RunOutcome.STALLED}
# What a task's own command may report under its token, and the run outcome each means.
_AGENT_REPORTS = {
    "task.completed": RunOutcome.DONE,
    "task.deferred": RunOutcome.DEFERRED,
    "task.retry_scheduled": RunOutcome.FAILED,
    "task.failed": RunOutcome.FAILED,
    "task.submitted": RunOutcome.DONE,
}


@dataclass(frozen=True, slots=True, kw_only=True)
class PythonJob:
    """Every task of this runner is a call of `execute(task, ctx)`."""

    execute: Execute
    capture_io: Any = None  # (run_id, task) -> {"transcript_path": ..., "stderr_path": ...}
    context: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunnerConfig:
    """What a runner is and how it behaves; durations in seconds."""

    name: str
    kinds: tuple[str, ...] = ()
    queues: tuple[str, ...] = ()
    labels: dict[str, str] = field(default_factory=dict)
    concurrency: int = 1
    max_tasks: int | None = None
    once: bool = False
    lease_s: float | None = None
    shutdown_timeout_s: float = 300.0
    idle_min_s: float = 0.05
    idle_max_s: float = 2.0


class Runner:
    """One worker process: `run()` returns its exit code."""

    def __init__(
        self,
        store: Store,
        config: RunnerConfig,
        job: CommandJob | PythonJob,
        *,
        settings: Settings,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        log: logging.Logger | None = None,
        worktrees: TaskWorktrees | None = None,
    ) -> None:
        self._store, self._config, self._job, self._settings = store, config, job, settings
        self._worktrees = worktrees  # each command task in its own git worktree
        self._clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._log = log or logger("corral.worker")
        self._ready = threading.Event()  # a task became ready (PostgreSQL NOTIFY), or a stop
        self._refused = threading.Event()
        self._lock = threading.Lock()
        self._shutdown_at: float | None = None
        self._immediate = False
        self._taken = 0
        self._unsuccessful = 0
        self._state: dict[str, Any] = {}
        self.worker_id = ""
        self._heartbeat: Heartbeat | None = None

    # -- lifecycle -------------------------------------------------------------------

    def run(self) -> int:
        """Run until told to stop (or out of work with --once / --max-tasks)."""
        # Before registering: a stop that comes as soon as the worker shows up is a stop.
        previous = self._install_signal_handlers()
        try:
            self._recover_dead_incarnations()
            beat = registry.register(self._store, self._new_worker(), settings=self._settings)
            self.worker_id = beat.worker.id
            event(
                self._log,
                "worker.started",
                worker_id=self.worker_id,
                name=self._config.name,
                pid=os.getpid(),
            )
            self._heartbeat = Heartbeat(
                self._store,
                self.worker_id,
                settings=self._settings,
                clock=self._clock,
                log=self._log,
            )
            self._heartbeat.start()
            stop_listening = self._store.wake_on_work(self._ready)
            try:
                self._run_slots()
            finally:
                stop_listening()
                self._heartbeat.stop()
                self._deregister()
        finally:
            self._restore_signal_handlers(previous)  # after: a late signal cannot cut it short
        return self._exit_code()

    def stop(self, *, immediate: bool = False) -> None:
        """Ask the runner to stop, as SIGTERM (or SIGQUIT with `immediate`) would."""
        with self._lock:
            if immediate or self._shutdown_at is not None:
                self._immediate = True
            if self._shutdown_at is None:
                self._shutdown_at = self._clock.monotonic()
        self._ready.set()

    def _new_worker(self) -> NewWorker:
        from corral import __version__

        c = self._config
        return NewWorker(
            name=c.name,
            kinds=c.kinds,
            queues=c.queues,
            labels=c.labels,
            max_concurrent=c.concurrency,
            pid=os.getpid(),
            version=__version__,
        )

    def _run_slots(self) -> None:
        slots = [
            threading.Thread(target=self._slot, name=f"corral-slot-{n}", daemon=True)
            for n in range(self._config.concurrency)
        ]
        for slot in slots:
            slot.start()
        for slot in slots:
            while slot.is_alive():
                slot.join(0.1)  # short joins keep the main thread free for signal handlers

    def _deregister(self) -> None:
        assert self._heartbeat is not None
        if self._heartbeat.dead.is_set():
            return  # the store already took this worker's claims away
        try:
            registry.deregister(self._store, self.worker_id, reason="stopped")
        except WorkerUnavailable as exc:  # deregistered or declared dead from outside
            event(self._log, "worker.already_gone", worker_id=self.worker_id, reason=exc.message)
        except CorralError as exc:
            event(
                self._log,
                "worker.deregister_failed",
                logging.ERROR,
                worker_id=self.worker_id,
                error=exc.message,
            )
        event(self._log, "worker.stopped", worker_id=self.worker_id, tasks=self._taken)

    def _exit_code(self) -> int:
        assert self._heartbeat is not None
        if self._heartbeat.dead.is_set():
            return 1
        return 1 if self._config.once and self._unsuccessful else 0

    # -- signals -------------------------------------------------------------------------

    def _install_signal_handlers(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}  # only the main thread may set handlers; callers then use stop()
        return {sig: signal.signal(sig, self._on_signal) for sig in _STOP_SIGNALS}

    def _restore_signal_handlers(self, previous: dict[int, Any]) -> None:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        immediate = signum == signal.SIGQUIT
        event(
            self._log, "worker.signal", worker_id=self.worker_id, signal=signal.Signals(signum).name
        )
        self.stop(immediate=immediate)

    # -- slots ---------------------------------------------------------------------------

    def _claiming_stopped(self) -> bool:
        assert self._heartbeat is not None
        return (
            self._shutdown_at is not None
            or self._heartbeat.drain.is_set()
            or self._heartbeat.dead.is_set()
            or self._refused.is_set()
        )

    def _reserve(self) -> bool:
        """Take one task from the budget (--once, --max-tasks); False when it is spent."""
        limit = 1 if self._config.once else self._config.max_tasks
        with self._lock:
            if limit is not None and self._taken >= limit:
                return False
            self._taken += 1
            return True

    def _unreserve(self) -> None:
        with self._lock:
            self._taken -= 1

    def _slot(self) -> None:
        idle_s = self._config.idle_min_s
        while not self._claiming_stopped() and self._reserve():
            self._ready.clear()  # from here on, a task made ready cuts the idle wait short
            claim = self._claim()
            if claim is None:
                self._unreserve()
                if self._config.once:
                    return
                if self._shutdown_at is None:  # else stop() set _ready before the clear
                    self._clock.wait(self._ready, idle_s * self._rng.uniform(0.5, 1.0))
                idle_s = min(self._config.idle_max_s, idle_s * 2)
                continue
            idle_s = self._config.idle_min_s
            self._work(claim)

    def _claim(self) -> Claim | None:
        try:
            return queue.claim_next(
                self._store,
                self.worker_id,
                kinds=self._config.kinds,
                queues=self._config.queues,
                lease_s=self._config.lease_s,
                settings=self._settings,
            )
        except StoreError as exc:
            event(
                self._log,
                "claim.failed",
                logging.WARNING,
                worker_id=self.worker_id,
                error=exc.message,
            )
            return None
        except WorkerUnavailable as exc:  # drained, deregistered or declared dead between beats
            event(self._log, "claim.refused", worker_id=self.worker_id, reason=exc.message)
            self._refused.set()
            return None

    # -- one task --------------------------------------------------------------------

    def _stop_reason(self, task_id: str) -> str | None:
        assert self._heartbeat is not None
        if self._heartbeat.lost(task_id):
            return "lease_lost"
        if self._immediate:
            return "shutdown"
        started = self._shutdown_at
        if (
            started is not None
            and self._clock.monotonic() - started >= self._config.shutdown_timeout_s
        ):
            return "shutdown"
        return None

    def _work(self, claim: Claim) -> None:
        assert self._heartbeat is not None
        run_id = new_id(RUN_PREFIX)
        self._heartbeat.hold(claim.task_id, claim.token)
        event(
            self._log,
            "task.started",
            worker_id=self.worker_id,
            task_id=claim.task_id,
            run_id=run_id,
            token=claim.token,
        )
        try:
            outcome = self._attempt(claim, run_id)
        except CorralError as exc:  # e.g. a task whose working directory does not exist
            event(
                self._log,
                "task.runner_error",
                logging.ERROR,
                task_id=claim.task_id,
                run_id=run_id,
                error=exc.message,
            )
            outcome = self._give_up(claim, run_id, f"runner error: {exc.message}")
        except Exception as exc:  # a surprise: one task's failure must not end the worker
            self._log.exception("task.runner_error task_id=%s run_id=%s", claim.task_id, run_id)
            outcome = self._give_up(claim, run_id, f"runner error: {type(exc).__name__}: {exc}")
        finally:
            self._heartbeat.drop(claim.task_id)
            if self._worktrees is not None:
                self._worktrees.leave(claim.task_id)
        if outcome not in (RunOutcome.DONE, RunOutcome.DEFERRED, RunOutcome.SHUTDOWN):
            with self._lock:
                self._unsuccessful += 1
        event(
            self._log,
            "task.finished",
            worker_id=self.worker_id,
            task_id=claim.task_id,
            run_id=run_id,
            outcome=outcome,
        )

    def _attempt(self, claim: Claim, run_id: str) -> RunOutcome:
        """Run the task and report it; store hiccups while reporting are retried."""
        task = self._retrying(lambda: self._store.get_task(claim.task_id))
        done = self._perform(task, claim, run_id)
        final_commit = self._worktrees.final_commit(task.id) if self._worktrees else None
        outcome, error = self._retrying(lambda: self._report(task, claim, done))
        try:
            self._retrying(
                lambda: self._store.finish_run(
                    run_id,
                    outcome=outcome,
                    exit_code=done.exit_code,
                    error=error,
                    usage=done.usage,
                    final_commit=final_commit,
                )
            )
        except Refused:  # closed already: this worker was declared dead meanwhile
            return self._store.get_run(run_id).outcome or outcome
        return outcome

    def _retrying(self, action: Callable[[], T]) -> T:
        """`action()`, tried again with growing waits while the store is unavailable."""
        for attempt in range(REPORT_RETRIES):
            try:
                return action()
            except StoreError as exc:
                event(
                    self._log,
                    "store.retry",
                    logging.WARNING,
                    worker_id=self.worker_id,
                    attempt=attempt + 1,
                    error=exc.message,
                )
                self._clock.sleep(min(5.0, 0.2 * 2**attempt))
        return action()

    def _give_up(self, claim: Claim, run_id: str, error: str) -> RunOutcome:
        """After an unexpected error: fail the task under its token and close its run, if we can."""
        with suppress(CorralError):
            queue.fail(
                self._store,
                claim.task_id,
                error=error,
                token=claim.token,
                settings=self._settings,
                rng=self._rng,
            )
        with suppress(CorralError):  # absent if the run never started, final if it finished
            self._store.finish_run(run_id, outcome=RunOutcome.FAILED, error=error)
        return RunOutcome.FAILED

    def _perform(self, task: Task, claim: Claim, run_id: str) -> Done:
        def stop() -> str | None:
            return self._stop_reason(task.id)

        if isinstance(self._job, CommandJob):
            job, base_commit = self._job, None
            if self._worktrees is not None:
                job, base_commit = self._worktrees.enter(task, claim, job)
            prepared = command_task.prepare(job, task, claim, run_id, self._store.url)
            spec = prepared.spec
            self._start_run(
                task,
                claim,
                run_id,
                prompt=prepared.prompt,
                command=spec.argv,
                cwd=spec.cwd,
                transcript=spec.transcript_path,
                stderr=spec.stderr_path,
                base_commit=base_commit,
            )
            return command_task.perform(
                job,
                prepared,
                clock=self._clock,
                stop=stop,
                on_stall=lambda: self._store.mark_stalled(run_id),
                on_resume=lambda: self._store.record_progress(run_id, None),
            )
        paths = self._job.capture_io(run_id, task) if self._job.capture_io else {}
        name = getattr(self._job.execute, "__qualname__", repr(self._job.execute))
        self._start_run(
            task,
            claim,
            run_id,
            prompt=None,
            command=(name,),
            cwd=os.getcwd(),
            transcript=paths.get("transcript_path"),
            stderr=paths.get("stderr_path"),
        )
        ctx = TaskContext(
            store=self._store,
            settings=self._settings,
            worker_id=self.worker_id,
            run_id=run_id,
            task=task,
            token=claim.token,
            state=self._state,
            extra=self._job.context,
            stop=stop,
            log=self._log,
        )
        return run_callable(self._job.execute, task, ctx)

    def _start_run(
        self,
        task: Task,
        claim: Claim,
        run_id: str,
        *,
        prompt: str | None,
        command: tuple[str, ...],
        cwd: str,
        transcript: str | None,
        stderr: str | None,
        base_commit: str | None = None,
    ) -> None:
        self._store.start_run(
            NewRun(
                task_id=task.id,
                worker_id=self.worker_id,
                token=claim.token,
                attempt=task.attempts,
                prompt=prompt,
                command=command,
                cwd=cwd,
                transcript_path=transcript,
                stderr_path=stderr,
                base_commit=base_commit,
            ),
            run_id=run_id,
        )

    def _report(self, task: Task, claim: Claim, done: Done) -> tuple[RunOutcome, str | None]:
        """Tell the store how the run ended, under the claim's token; the run's outcome."""
        try:
            return self._report_under_token(task, claim.token, done)
        except (StaleToken, InvalidTransition):
            said = self._reported_by_agent(task.id, claim.token)
            if said is not None:
                return said, None  # the agent reported itself (`corral done/fail/defer`)
            current = self._store.get_task(task.id)
            return (
                RunOutcome.LEASE_LOST,
                f"the claim ended while running (task is {current.status})",
            )

    def _reported_by_agent(self, task_id: str, token: int) -> RunOutcome | None:
        """What the task's own command reported under this run's token, if it did."""
        from corral.events import EventFilter

        for past in reversed(self._store.list_events(EventFilter(task_id=task_id, limit=20))):
            if past.token == token and past.name in _AGENT_REPORTS and past.actor != "reconciler":
                return _AGENT_REPORTS[past.name]
        return None

    def _report_under_token(
        self, task: Task, token: int, done: Done
    ) -> tuple[RunOutcome, str | None]:
        if done.success:
            queue.complete(self._store, task.id, token=token, result=done.result)
            return RunOutcome.DONE, None
        if done.defer_s is not None:
            queue.defer(
                self._store, task.id, until=done.defer_s, token=token, reason="exit status 75"
            )
            return RunOutcome.DEFERRED, None
        if done.ending is Ending.STOPPED and done.stop_reason == "lease_lost":
            return RunOutcome.LEASE_LOST, done.error
        if done.ending is Ending.STOPPED:
            queue.release(self._store, task.id, token=token, reason="worker shutting down")
            return RunOutcome.SHUTDOWN, done.error
        error = done.error or "failed"
        queue.fail(
            self._store, task.id, error=error, token=token, settings=self._settings, rng=self._rng
        )
        return _failure_outcome(done), error

    # -- crash recovery ----------------------------------------------------------------

    def _recover_dead_incarnations(self) -> None:
        """Release, at once, the claims of earlier runners of this name on this host that died."""
        host = os.uname().nodename
        for worker in self._store.list_workers(tuple(WATCHED)):
            if worker.name != self._config.name or worker.hostname != host:
                continue
            if process_alive(worker.pid, worker.registered_at.timestamp()):
                continue
            for run in self._store.unfinished_runs(worker.id):
                ended = end_marked_processes(run.id, clock=self._clock)
                event(self._log, "run.orphans_ended", run_id=run.id, processes=ended)
            report = reconciler.recover_worker(
                self._store,
                worker.id,
                reason=f"process {worker.pid} is gone (restarted)",
                settings=self._settings,
                rng=self._rng,
            )
            event(
                self._log,
                "worker.recovered_incarnation",
                worker_id=worker.id,
                pid=worker.pid,
                claims_expired=report.claims_expired,
            )


def _failure_outcome(done: Done) -> RunOutcome:
    """timeout and stalled as such; killed when a signal from outside ended the command."""
    if done.ending is Ending.EXITED and done.exit_code is not None and done.exit_code < 0:
        return RunOutcome.KILLED
    return _FAILED.get(done.ending, RunOutcome.FAILED)


def process_alive(pid: int | None, registered_at_s: float) -> bool:
    """True if `pid` runs and was started before the worker registered (not a reused pid)."""
    if pid is None:
        return True  # cannot tell: leave it to the reconciler
    try:
        process = psutil.Process(pid)
        return bool(
            process.create_time() <= registered_at_s + 1.0
            and process.status() != psutil.STATUS_ZOMBIE  # exited, not yet reaped
        )
    except psutil.Error:
        return False
