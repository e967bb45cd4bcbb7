"""The worker runner: register, heartbeat, claim, run, report, and shut down cleanly.

    start ── recover dead incarnations of this name on this host (their claims, at once)
          ── register ── heartbeat thread ── N slots, each:
               exchange: one write transaction that reports the tasks finished since
               the last one and claims up to k more (only its kinds), each claim
               opening its run record ─none─► wait, backing off with jitter (0.05 s .. 2 s),
               cut short when a task becomes ready (PostgreSQL: LISTEN/NOTIFY)
                   │
                   └─► for each task held: command or Python function ─► its report:
                        success: complete · exit 75: defer · shutdown: release ·
                        else: fail (retry policy); a report whose token went stale
                        changes nothing, and its run records what the agent reported
                        or lease_lost
    k is 1 unless `batch` allows more (corral.model.batches: it adapts to the queue's depth).
    SIGTERM / SIGINT ─► stop claiming, let running tasks finish within shutdown_timeout_s,
                        then stop them; release their claims and those of held tasks
                        not started ─► deregister ─► exit 0
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
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, TypeVar

from corral import claims, reconcile, workers
from corral.clock import Clock, SystemClock
from corral.errors import (
    CorralError,
    StoreError,
    WorkerUnavailable,
)
from corral.git.task_worktrees import TaskWorktrees
from corral.logs import event, logger
from corral.model.batches import (
    Action,
    ClaimAsk,
    Exchanged,
    Held,
    Report,
    RunStart,
    next_batch_size,
)
from corral.model.runs import RunOutcome
from corral.model.states import WATCHED
from corral.model.tasks import Task
from corral.model.workers import NewWorker
from corral.processes import process_alive
from corral.runtime.worker import command_job
from corral.runtime.worker.command_job import CommandJob, Prepared
from corral.runtime.worker.executor import end_marked_processes
from corral.runtime.worker.heartbeat import Heartbeat
from corral.runtime.worker.outcome import Done, report_of
from corral.runtime.worker.python_job import Execute, TaskContext, run_callable
from corral.runtime.worker.spares import Spares
from corral.settings import Settings
from corral.store import Store

_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)
REPORT_RETRIES = 5  # store calls after a run, tried again while the store is unavailable
T = TypeVar("T")


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
    batch: int = 1  # most tasks a slot claims at once (1: one at a time); corral.model.batches
    batch_window_s: float = 0.1  # how long finished tasks of a batch may wait to be reported


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
        self._prepared: dict[str, Prepared | Exception] = {}  # command runs, by run id
        # How a run is recorded when its claim opens it; a command job's is made precise by
        # _open_run, task by task.
        self._run_default = RunStart(
            command=job.argv if isinstance(job, CommandJob) else (_name_of(job),), cwd=os.getcwd()
        )
        self.worker_id = ""
        self._heartbeat: Heartbeat | None = None
        self._spares: Spares | None = None  # output files made ahead, for command jobs

    # -- lifecycle -------------------------------------------------------------------

    def run(self) -> int:
        """Run until told to stop (or out of work with --once / --max-tasks)."""
        # Before registering: a stop that comes as soon as the worker shows up is a stop.
        previous = self._install_signal_handlers()
        try:
            self._recover_dead_incarnations()
            beat = workers.register(self._store, self._new_worker(), settings=self._settings)
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
            stop_listening = self._store.wake_on_work(self._ready)
            try:
                self._heartbeat.start()
                if isinstance(self._job, CommandJob):
                    self._spares = Spares(self._job.runs_dir)
                self._run_slots()
            finally:
                stop_listening()
                if self._spares is not None:
                    self._spares.close()
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
            max_concurrent=c.concurrency * c.batch,
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
            workers.deregister(self._store, self.worker_id, reason="stopped")
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

    def _reserve(self, wanted: int) -> int:
        """Take up to `wanted` tasks from the budget (--once, --max-tasks); 0 when stopping."""
        if self._claiming_stopped():
            return 0
        limit = 1 if self._config.once else self._config.max_tasks
        with self._lock:
            granted = wanted if limit is None else max(0, min(wanted, limit - self._taken))
            self._taken += granted
            return granted

    def _unreserve(self, count: int) -> None:
        with self._lock:
            self._taken -= count

    def _slot(self) -> None:
        """Claim a batch (its size adapting: corral.model.batches), run its tasks, report them
        together with the next claim, until told to stop or out of budget."""
        size, idle_s = 1, self._config.idle_min_s
        reports: list[Report] = []
        while True:
            asked = self._reserve(size)
            self._ready.clear()  # from here on, a task made ready cuts the idle wait short
            held = self._exchange(reports, asked)  # empties `reports` once they are applied
            if not held:
                if not asked or self._config.once:
                    return  # reports the store never took are left to the reconciler
                if self._shutdown_at is None:  # else stop() set _ready before the clear
                    self._clock.wait(self._ready, idle_s * self._rng.uniform(0.5, 1.0))
                idle_s, size = min(self._config.idle_max_s, idle_s * 2), 1
                continue
            idle_s = self._config.idle_min_s
            began = self._clock.monotonic()
            reports += self._run_batch(held)
            size = next_batch_size(
                size,
                len(held),
                mean_task_s=(self._clock.monotonic() - began) / len(held),
                most=self._config.batch,
                window_s=self._config.batch_window_s,
            )

    def _run_batch(self, held: list[Held]) -> list[Report]:
        """Run the held tasks in order; reports wait for the next claim, unless they have
        waited `batch_window_s` already, so long batches still report as they go."""
        reports: list[Report] = []
        since = self._clock.monotonic()
        for n, h in enumerate(held, 1):
            reports.append(self._work(h) if self._may_start(h) else self._unstarted(h))
            if n < len(held) and self._clock.monotonic() - since >= self._config.batch_window_s:
                self._exchange(reports, 0)
                since = self._clock.monotonic()
        return reports

    def _exchange(self, reports: list[Report], asked: int) -> list[Held]:
        """Report, and claim up to `asked` tasks, in one transaction; what was claimed.

        `reports` is emptied once the store took them; while it cannot be reached they
        stay, to go with the next exchange.
        """
        c = self._config
        ask = ClaimAsk(
            limit=asked, kinds=c.kinds, queues=c.queues, lease_s=c.lease_s, run=self._run_default
        )

        def once() -> Exchanged:
            return claims.exchange(
                self._store,
                self.worker_id,
                reports=reports,
                ask=ask if asked else None,
                open_run=self._open_run,
                settings=self._settings,
                rng=self._rng,
            )

        if not reports and not asked:
            return []
        try:
            done = self._retrying(once) if reports else once()
        except StoreError as exc:  # tried again with the next exchange
            event(
                self._log,
                "claim.failed",
                logging.WARNING,
                worker_id=self.worker_id,
                error=exc.message,
            )
            self._unreserve(asked)
            return []
        self._settle(reports, done)
        reports.clear()
        self._unreserve(asked - len(done.held))
        for h in done.held:
            self._heartbeat_of().hold(h.task.id, h.token)
        return list(done.held)

    def _heartbeat_of(self) -> Heartbeat:
        assert self._heartbeat is not None
        return self._heartbeat

    def _settle(self, reports: list[Report], done: Exchanged) -> None:
        """After an exchange: stale reports finish their runs apart; log every outcome."""
        if done.refused is not None:
            event(self._log, "claim.refused", worker_id=self.worker_id, reason=done.refused)
            self._refused.set()
        stale = {r.token for r in done.stale}
        for r in reports:
            outcome = done.settled.get(r.run_id or "", r.outcome) if r.token in stale else r.outcome
            self._heartbeat_of().drop(r.task_id)
            if self._worktrees is not None:  # after the report: a task now in review keeps it
                self._worktrees.leave(r.task_id)
            if outcome not in (RunOutcome.DONE, RunOutcome.DEFERRED, RunOutcome.SHUTDOWN):
                with self._lock:
                    self._unsuccessful += 1
            event(
                self._log,
                "task.finished",
                logging.DEBUG if outcome is RunOutcome.DONE else logging.INFO,
                worker_id=self.worker_id,
                task_id=r.task_id,
                run_id=r.run_id,
                outcome=outcome,
            )

    def _open_run(self, task: Task, token: int, run_id: str) -> RunStart:
        """How the run of a task just claimed is recorded (inside the claim's transaction)."""
        if isinstance(self._job, PythonJob):
            return self._run_default
        if self._worktrees is not None:
            # git must not run under the claim's write lock: _perform makes the worktree,
            # then records where the run really runs (_enter_worktree).
            return RunStart(command=self._job.argv, cwd=os.getcwd())
        try:
            prepared = command_job.prepare(
                self._job,
                task,
                token=token,
                run_id=run_id,
                worker_id=self.worker_id,
                db=self._store.url,
            )
        except Exception as exc:  # must not raise: the runner fails the task instead
            self._prepared[run_id] = exc
            return RunStart(command=self._job.argv, cwd=os.getcwd())
        self._prepared[run_id] = prepared
        spec = prepared.spec
        return RunStart(
            command=spec.argv,
            cwd=os.path.abspath(spec.cwd),
            prompt=prepared.prompt,
            transcript_path=os.path.abspath(spec.transcript_path),
            stderr_path=os.path.abspath(spec.stderr_path),
        )

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

    def _may_start(self, h: Held) -> bool:
        """False for a held task that should not start: stopping, or its claim is lost."""
        beat = self._heartbeat_of()
        return not (self._shutdown_at is not None or beat.dead.is_set() or beat.lost(h.task.id))

    def _unstarted(self, h: Held) -> Report:
        """A held task given back unstarted: released, its run finished as shutdown."""
        self._prepared.pop(_run_of(h), None)
        lost = self._heartbeat_of().lost(h.task.id)
        outcome = RunOutcome.LEASE_LOST if lost else RunOutcome.SHUTDOWN
        return Report.of(
            h, Action.RELEASE, outcome, error="not started", reason="worker shutting down"
        )

    def _work(self, h: Held) -> Report:
        """Run one held task; its report (a runner error fails the task)."""
        event(
            self._log,
            "task.started",
            logging.DEBUG,
            worker_id=self.worker_id,
            task_id=h.task.id,
            run_id=_run_of(h),
            token=h.token,
        )
        try:
            report = report_of(h, self._perform(h))
            if self._worktrees is None:
                return report
            return report._replace(final_commit=self._worktrees.final_commit(h.task.id))
        except CorralError as exc:  # e.g. a task whose working directory does not exist
            event(
                self._log,
                "task.runner_error",
                logging.ERROR,
                task_id=h.task.id,
                run_id=_run_of(h),
                error=exc.message,
            )
            error = f"runner error: {exc.message}"
        except Exception as exc:  # a surprise: one task's failure must not end the worker
            self._log.exception("task.runner_error task_id=%s run_id=%s", h.task.id, _run_of(h))
            error = f"runner error: {type(exc).__name__}: {exc}"
        return Report.of(h, Action.FAIL, RunOutcome.FAILED, error=error)

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

    def _perform(self, h: Held) -> Done:
        task = h.task

        def stop() -> str | None:
            return self._stop_reason(task.id)

        if isinstance(self._job, CommandJob):
            job, prepared = self._prepared_command(h)
            return command_job.perform(
                job,
                prepared,
                clock=self._clock,
                stop=stop,
                on_stall=lambda: self._store.mark_stalled(_run_of(h)),
                on_resume=lambda: self._store.record_progress(_run_of(h), None),
                spares=self._spares,
            )
        if self._job.capture_io:
            paths = self._job.capture_io(_run_of(h), task) or {}
            self._store.set_run_paths(
                _run_of(h),
                transcript_path=paths.get("transcript_path"),
                stderr_path=paths.get("stderr_path"),
            )
        ctx = TaskContext(
            store=self._store,
            settings=self._settings,
            worker_id=self.worker_id,
            run_id=_run_of(h),
            task=task,
            token=h.token,
            state=self._state,
            extra=self._job.context,
            stop=stop,
            log=self._log,
        )
        return run_callable(self._job.execute, task, ctx)

    def _prepared_command(self, h: Held) -> tuple[CommandJob, Prepared]:
        """The command of held task `h`: prepared in the claim's transaction, or, in a
        worktree, prepared now that the worktree exists (and its run record completed)."""
        assert isinstance(self._job, CommandJob)
        if self._worktrees is None:
            prepared = self._prepared.pop(_run_of(h))
            if isinstance(prepared, Exception):
                raise prepared
            return self._job, prepared
        entered = self._worktrees.enter(h.task, h.token, self.worker_id)
        job, base_commit = command_job.in_worktree(self._job, entered), entered.base_commit
        prepared = command_job.prepare(
            job,
            h.task,
            token=h.token,
            run_id=_run_of(h),
            worker_id=self.worker_id,
            db=self._store.url,
        )
        spec = prepared.spec
        self._store.set_run_start(
            _run_of(h),
            RunStart(
                command=spec.argv,
                cwd=os.path.abspath(spec.cwd),
                prompt=prepared.prompt,
                transcript_path=os.path.abspath(spec.transcript_path),
                stderr_path=os.path.abspath(spec.stderr_path),
                base_commit=base_commit,
            ),
        )
        return job, prepared

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
            report = reconcile.recover_worker(
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


def _run_of(held: Held) -> str:
    """The id of the run a runner's claim opened (its asks always open one)."""
    assert held.run_id is not None, "a runner's claims open runs"
    return held.run_id


def _name_of(job: CommandJob | PythonJob) -> str:
    """What a Python job's runs record as their command: the function's name."""
    if isinstance(job, CommandJob):
        return job.argv[0]
    return str(getattr(job.execute, "__qualname__", repr(job.execute)))
