"""The worker runner: one process's life as a worker, from registering to exiting.

    start ── recover dead incarnations of this name on this host (incarnations.py)
          ── register ── heartbeat thread (heartbeat.py) ── wake-ups (PostgreSQL: LISTEN)
          ── the job begun for this worker (jobs.py) ── its lanes (lanes.py), each one
             claiming, running and reporting tasks until claiming stops
          ── the job ended ── heartbeat stopped ── deregister ── exit code
    declared dead (by a reconcile pass, say after a store outage or a long pause) ─►
             its claims are gone: its running tasks are stopped (their tokens are fenced)
             ── register again, as a new worker, and go on taking work
             (not when stopping, drained, out of budget, or taken offline)
    declared stale ─► nothing changes: it keeps its claims, and its next heartbeat makes
             it idle or busy again
    SIGTERM / SIGINT ─► stop claiming, let running tasks finish within shutdown_timeout_s,
                        then stop them; release their claims and those of held tasks
                        not started ─► deregister ─► exit 0
    second signal, or SIGQUIT ─► stop running tasks now (claims released) ─► exit 0
                        (stopping.py)

Exit codes (seed 003): 0 clean exit; 1 the task of `--once` did not succeed, or the store
declared this worker dead when it had no work left to take (--once, --max-tasks); 2
configuration error; 3 a tool (the command, the store) is unavailable: among others, the
store could not be written when the runner stopped (a full disk), so a task's end went
unreported or the worker is not offline; the reconciler returns its tasks. A drained worker
finishes what it holds and exits 0.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import TYPE_CHECKING

from corral import __version__
from corral.foundation.clock import Clock, SystemClock
from corral.foundation.errors import CorralError, StoreError, WorkerUnavailable
from corral.foundation.logs import event, logger
from corral.foundation.process_keys import key_digest, own_key_hash, runs_key
from corral.foundation.processes import started_at
from corral.foundation.settings import Settings
from corral.model.workers import NewWorker
from corral.runtime import signals
from corral.runtime.worker.admission import MemoryGate, available_bytes
from corral.runtime.worker.config import RunnerConfig, Workplace
from corral.runtime.worker.heartbeat import Heartbeat
from corral.runtime.worker.incarnations import recover_dead_incarnations
from corral.runtime.worker.jobs import Job
from corral.runtime.worker.lanes import Budget, Lane
from corral.runtime.worker.python_job import PythonJob
from corral.runtime.worker.stopping import Stopping
from corral.runtime.worker.worktree_job import WorktreeJob
from corral.store import Store
from corral.usecases import workers

if TYPE_CHECKING:
    from corral.runtime.worker.output_shipping import OutputShipper
    from corral.runtime.worker.tracing import RunTracer

# RunnerConfig and PythonJob are imported from here by callers of old (tests, bench).
__all__ = ["PythonJob", "Runner", "RunnerConfig"]
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT)


class Runner:
    """One worker process: `run()` returns its exit code."""

    def __init__(
        self,
        store: Store,
        config: RunnerConfig,
        job: Job,
        *,
        settings: Settings,
        clock: Clock | None = None,
        rng: random.Random | None = None,
        log: logging.Logger | None = None,
        memory_available: Callable[[], int] | None = None,
        tracer: RunTracer | None = None,
    ) -> None:
        """`memory_available` reads the host's available memory in bytes (default psutil's),
        for the gate of a profile that states its runs' memory (admission.py); `tracer`
        makes a span of each run (tracing.py), its owner closes it."""
        self._store, self._config, self._settings = store, config, settings
        self._tracer = tracer
        self._memory_available = memory_available
        self._job = job  # with its worktrees and verify step, if any (assembly.py)
        # Where its worktrees are, registered with the worker (NewWorker.site).
        self._site = self._job.worktrees.site if isinstance(self._job, WorktreeJob) else None
        self._clock = clock or SystemClock()
        self._rng = rng or random.Random()
        self._log = log or logger("corral.worker")
        self._ready = threading.Event()  # a task became ready (PostgreSQL NOTIFY), or a stop
        self._stopping = Stopping(
            clock=self._clock,
            timeout_s=config.shutdown_timeout_s,
            wake=self._ready,
            on_ask=store.stop_waiting,
        )
        self._budget = Budget(1 if config.once else config.max_tasks)
        self.worker_id = ""
        self._store_failed = False  # reports or the deregistration never reached the store

    def run(self) -> int:
        """Run until told to stop (or out of work with --once / --max-tasks)."""
        # Handled from before registering (a stop that comes as soon as the worker shows up
        # is a stop) until after deregistering (a late signal cannot cut that short).
        with signals.relayed(_STOP_SIGNALS, self._on_signal):
            recover_dead_incarnations(
                self._store,
                self._config.name,
                settings=self._settings,
                clock=self._clock,
                rng=self._rng,
                log=self._log,
            )
            while True:
                heartbeat, unsuccessful = self._register_and_serve()
                if not self._registers_again(heartbeat):
                    break
                event(self._log, "worker.reregistering", worker_id=self.worker_id)
        if self._store_failed:
            return 3
        if heartbeat.dead.is_set() and not heartbeat.offline.is_set():
            return 1
        return 1 if self._config.once and unsuccessful else 0

    def stop(self, *, immediate: bool = False) -> None:
        """Ask the runner to stop, as SIGTERM (or SIGQUIT with `immediate`) would."""
        self._stopping.ask(immediate=immediate)

    def _new_worker(self) -> NewWorker:
        c = self._config
        return NewWorker(
            name=c.name,
            kinds=c.kinds,
            queues=c.queues,
            labels=c.labels,
            max_concurrent=c.concurrency * c.batch,
            pid=os.getpid(),
            pid_started_at=started_at(os.getpid()),
            key_hash=own_key_hash(),
            runs_key_hash=key_digest(runs_key()),
            version=c.version or __version__,
            provider=c.provider,
            site=self._site,
        )

    def _register_and_serve(self) -> tuple[Heartbeat, int]:
        """A new worker registered and served; its heartbeat (which knows whether the store
        declared it dead) and how many of its runs did not succeed."""
        beat = workers.register(self._store, self._new_worker(), settings=self._settings)
        self.worker_id = beat.worker.id
        event(
            self._log,
            "worker.started",
            worker_id=self.worker_id,
            name=self._config.name,
            pid=os.getpid(),
        )
        return self._serve()

    def _registers_again(self, heartbeat: Heartbeat) -> bool:
        """Whether to register a new worker: this one was declared dead (not taken offline),
        and the runner is neither stopping, drained, nor out of budget."""
        return (
            heartbeat.dead.is_set()
            and not heartbeat.offline.is_set()
            and not heartbeat.drain.is_set()
            and not self._stopping.asked
            and not self._budget.spent
        )

    def _serve(self) -> tuple[Heartbeat, int]:
        """The registered worker: heartbeat and wake-ups around the lanes, then deregister;
        its heartbeat, and how many of its runs did not succeed."""
        shipper = self._shipper()
        place = Workplace(
            store=self._store,
            worker_id=self.worker_id,
            settings=self._settings,
            clock=self._clock,
            log=self._log,
            shipper=shipper,
        )
        heartbeat = Heartbeat(
            self._store, self.worker_id, settings=self._settings, clock=self._clock, log=self._log
        )
        stop_listening = self._store.wake_on_work(self._ready)
        try:
            heartbeat.start()
            if shipper is not None:
                shipper.start()
            unsuccessful = self._run_lanes(place, heartbeat)
        finally:
            stop_listening()
            if shipper is not None:
                shipper.stop()
            heartbeat.stop()
            self._deregister(heartbeat)
        return heartbeat, unsuccessful

    def _shipper(self) -> OutputShipper | None:
        """On a store behind `corral serve`, what copies run output to the server."""
        if self._store.dialect != "http":
            return None
        from corral.runtime.worker.output_shipping import OutputShipper  # noqa: PLC0415
        from corral.store.remote.transport import HttpTransport  # noqa: PLC0415

        assert isinstance(self._store.transport, HttpTransport)
        return OutputShipper(self._store.transport, clock=self._clock, log=self._log)

    def _run_lanes(self, place: Workplace, heartbeat: Heartbeat) -> int:
        """The job begun for this worker, run in the lanes until they end, then ended; how
        many of its runs did not succeed."""
        runs = self._job.begin(place)
        try:
            lanes = Lane(
                place,
                self._config,
                runs,
                budget=self._budget,
                heartbeat=heartbeat,
                stopping=self._stopping,
                ready=self._ready,
                rng=self._rng,
                gate=self._memory_gate(),
                tracer=self._tracer,
            )
            lanes.run()
            if lanes.unreported:
                self._store_failed = True
            return lanes.unsuccessful
        finally:
            runs.end()

    def _memory_gate(self) -> MemoryGate | None:
        """The gate of an agent that states its runs' memory; None for the others."""
        need_mb = self._config.memory_mb
        if need_mb is None:
            return None
        read = self._memory_available or available_bytes
        return MemoryGate(need_mb, read=read, log=self._log, worker=self._config.name)

    def _deregister(self, heartbeat: Heartbeat) -> None:
        if heartbeat.dead.is_set():
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
            # Not offline, its claims still held: the reconciler returns them once its
            # heartbeats have stopped long enough; the supervisor learns of it by exit 3.
            self._store_failed = self._store_failed or isinstance(exc, StoreError)
        event(self._log, "worker.stopped", worker_id=self.worker_id, tasks=self._budget.taken)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        """On the signal relay's thread (runtime/signals.py): run in the main thread, its
        log line once interrupted the first signal's and raised, and the second SIGINT it
        carried was lost, its task left running."""
        self.stop(immediate=signum == signal.SIGQUIT)
        name = signal.Signals(signum).name
        event(self._log, "worker.signal", worker_id=self.worker_id, signal=name)
