"""A runner's lanes: claim, run, report, on `concurrency` threads, until stopped or out of budget.

Each lane, on a thread of its own:

    exchange (batches.py): report what finished and claim up to k tasks, in one write
    transaction ─none─► wait, backing off with jitter (idle_min_s .. idle_max_s, or at most
        OUTAGE_POLL_S while the store is out of reach), cut short when a task becomes
        ready (PostgreSQL: LISTEN/NOTIFY) or a stop is asked; on an HTTP store the
        server holds the exchange until work comes (a long poll), and the lane asks again
      │
      └─held─► each task in order: performed by the job (jobs.py), or given back
               unstarted when stopping or its claim is lost ─► its report, which waits
               for the next exchange unless the batch has run batch_window_s already
               (and, when OTEL_* ask for traces, the run's span: tracing.py)
k is 1 unless `batch` allows more (corral.model.exchange: it adapts to the queue's depth);
0 while the memory gate holds back (admission.py): the lane reports, claims nothing and
waits as if idle, the tasks staying ready for another host.

A lane ends once claiming stops (a stop asked; the worker drained, declared dead or taken
offline; a worker declared stale claims again once its heartbeat made it idle) or the
budget of --once / --max-tasks is spent; reports the store never took are left to the
reconciler, and make the runner exit 3. A task's run asks `stop()` whether to go on: it
answers "lease_lost" once the heartbeat finds the claim gone, "shutdown" once the stop is
overdue (stopping.py).
"""

from __future__ import annotations

import logging
import random
import threading
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.foundation.errors import CorralError
from corral.foundation.logs import event
from corral.model.exchange import Action, Held, Report, next_batch_size
from corral.model.runs import RunOutcome
from corral.runtime.worker.admission import MemoryGate
from corral.runtime.worker.batches import Claimed, Exchanger, Finished
from corral.runtime.worker.config import RunnerConfig, Workplace
from corral.runtime.worker.heartbeat import Heartbeat
from corral.runtime.worker.jobs import Runs
from corral.runtime.worker.reports import Done, report_of
from corral.runtime.worker.stopping import Stopping

if TYPE_CHECKING:
    from corral.runtime.worker.tracing import RunTracer

OUTAGE_POLL_S = 0.25  # the longest wait between exchanges while the store is out of reach


class Budget:
    """The tasks a runner may still take: one with --once, n with --max-tasks, else any."""

    def __init__(self, limit: int | None) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self.taken = 0

    def reserve(self, wanted: int) -> int:
        """Take up to `wanted` tasks from the budget; how many were granted."""
        with self._lock:
            limit = self._limit
            granted = wanted if limit is None else max(0, min(wanted, limit - self.taken))
            self.taken += granted
            return granted

    @property
    def spent(self) -> bool:
        """True once every task the budget allows was taken."""
        with self._lock:
            return self._limit is not None and self.taken >= self._limit

    def give_back(self, count: int) -> None:
        """Return `count` reserved tasks that were not claimed."""
        with self._lock:
            self.taken -= count


class Lane:
    """A runner's lanes; `run()` returns once every lane has ended.

    A lane is one of the `concurrency` task loops of one worker process; a *slot* is the
    pool's place for a whole worker process (`slot-N`, runtime/pool/supervisor.py)."""

    def __init__(
        self,
        place: Workplace,
        config: RunnerConfig,
        runs: Runs[Any],
        *,
        budget: Budget,
        heartbeat: Heartbeat,
        stopping: Stopping,
        ready: threading.Event,
        rng: random.Random,
        gate: MemoryGate | None = None,
        tracer: RunTracer | None = None,
    ) -> None:
        self._place, self._config, self._runs = place, config, runs
        self._gate = gate  # an agent that states its runs' memory: no claim below it
        self._tracer = tracer  # OTEL_* asked for traces: a span per run (tracing.py)
        self._heartbeat, self._stopping, self._ready, self._rng = heartbeat, stopping, ready, rng
        self._budget = budget
        self._exchanger = Exchanger(place, config, runs, heartbeat, rng)
        self._lock = threading.Lock()
        self.unreported = 0  # reports the store never took when their lane ended

    def run(self) -> None:
        """Run every lane on its own thread until all have ended."""
        threads = [
            threading.Thread(target=self._lane, name=f"corral-lane-{n}", daemon=True)
            for n in range(self._config.concurrency)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.1)  # short joins keep the main thread free for signal handlers

    @property
    def unsuccessful(self) -> int:
        """How many runs ended neither done, deferred nor shut down."""
        return self._exchanger.unsuccessful

    def _lane(self) -> None:
        """Claim a batch (its size adapting: corral.model.exchange), run its tasks, report them
        together with the next claim, until told to stop or out of budget."""
        c, clock = self._config, self._place.clock
        size, idle_s = 1, c.idle_min_s
        finished: list[Finished] = []
        while True:
            stopped = self._claiming_stopped()
            # Held back for memory: report what finished, claim nothing, wait as if idle.
            held = not stopped and self._gate is not None and self._gate.held() is not None
            asked = 0 if stopped or held else self._budget.reserve(size)
            self._ready.clear()  # from here on, a task made ready cuts the idle wait short
            claimed = self._exchanger.exchange(finished, asked)  # empties `finished` once applied
            self._budget.give_back(asked - len(claimed))
            if not claimed:
                if not held and (not asked or c.once):
                    self._left_unreported(finished)
                    return
                if self._exchanger.waited():  # the store waited for work already
                    continue
                # A store out of reach is tried again soon, so work resumes as it returns.
                out = self._exchanger.unreachable()
                wait_s = min(idle_s, OUTAGE_POLL_S) if out else idle_s
                if not self._stopping.asked:  # else the stop set _ready before the clear
                    clock.wait(self._ready, wait_s * self._rng.uniform(0.5, 1.0))
                idle_s, size = min(c.idle_max_s, idle_s * 2), 1
                continue
            idle_s = c.idle_min_s
            began = clock.monotonic()
            finished += self._run_batch(claimed)
            size = next_batch_size(
                size,
                len(claimed),
                mean_task_s=(clock.monotonic() - began) / len(claimed),
                most=c.batch,
                window_s=c.batch_window_s,
            )

    def _left_unreported(self, finished: list[Finished]) -> None:
        """The lane ends with reports the store never took (it could not be written: a
        full disk, an outage past the retries): their tasks are left to the reconciler,
        and the runner exits 3 (store unavailable)."""
        if not finished:
            return
        with self._lock:
            self.unreported += len(finished)
        for f in finished:
            event(
                self._place.log,
                "task.unreported",
                logging.ERROR,
                worker_id=self._place.worker_id,
                task_id=f.held.task.id,
                run_id=f.held.run_id,
                outcome=f.report.outcome,
            )

    def _claiming_stopped(self) -> bool:
        beat = self._heartbeat
        return self._stopping.asked or beat.drain.is_set() or beat.dead.is_set()

    def _run_batch(self, claimed: list[Claimed]) -> list[Finished]:
        """Run the claimed tasks in order; reports wait for the next claim, unless they have
        waited `batch_window_s` already, so long batches still report as they go."""
        clock, window_s = self._place.clock, self._config.batch_window_s
        finished: list[Finished] = []
        since = clock.monotonic()
        for n, run in enumerate(claimed, 1):
            report = self._work(run) if self._may_start(run.held) else self._unstarted(run.held)
            finished.append(Finished(held=run.held, report=report, opened=run.opened))
            if n < len(claimed) and clock.monotonic() - since >= window_s:
                self._exchanger.exchange(finished, 0)
                since = clock.monotonic()
        return finished

    def _may_start(self, h: Held) -> bool:
        """False for a held task that should not start: stopping, or its claim is lost."""
        beat = self._heartbeat
        return not (self._stopping.asked or beat.dead.is_set() or beat.lost(h.task.id))

    def _unstarted(self, h: Held) -> Report:
        """A held task given back unstarted: released, its run finished as shutdown."""
        lost = self._heartbeat.lost(h.task.id)
        outcome = RunOutcome.LEASE_LOST if lost else RunOutcome.SHUTDOWN
        return Report.of(
            h, Action.RELEASE, outcome, error="not started", reason="worker shutting down"
        )

    def _work(self, run: Claimed) -> Report:
        """Have the job perform one claimed task; its report (a runner error fails the task)."""
        h, place = run.held, self._place
        event(
            place.log,
            "task.started",
            logging.DEBUG,
            worker_id=place.worker_id,
            task_id=h.task.id,
            run_id=h.run_id,
            token=h.token,
        )
        started_at = None if self._tracer is None else place.clock.now()
        try:
            done = self._runs.perform(h, run.opened, lambda: self._stop_reason(h))
            report = report_of(h, done)
        except CorralError as exc:  # e.g. a task whose working directory does not exist
            event(
                place.log,
                "task.runner_error",
                logging.ERROR,
                task_id=h.task.id,
                run_id=h.run_id,
                error=exc.message,
            )
            error = f"runner error: {exc.message}"
        except Exception as exc:  # a surprise: one task's failure must not end the worker
            place.log.exception("task.runner_error task_id=%s run_id=%s", h.task.id, h.run_id)
            error = f"runner error: {type(exc).__name__}: {exc}"
        else:
            if started_at is not None:
                self._trace(h, done, report, started_at)
            return report
        return Report.of(h, Action.FAIL, RunOutcome.FAILED, error=error)

    def _trace(self, h: Held, done: Done, report: Report, started_at: datetime) -> None:
        """The run's span (tracing.py); a failure to make it is logged, never the run's."""
        assert self._tracer is not None
        try:
            self._tracer.ended(self._place, h, done, report, started_at=started_at)
        except Exception:  # telemetry must not end the worker, nor change the report
            self._place.log.exception("run.trace_failed run_id=%s", h.run_id)

    def _stop_reason(self, h: Held) -> str | None:
        """Why the task of `h` must stop now: its claim is lost, or the stop is overdue."""
        if self._heartbeat.lost(h.task.id):
            return "lease_lost"
        return "shutdown" if self._stopping.overdue() else None
