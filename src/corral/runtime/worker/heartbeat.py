"""The heartbeat thread: proves the runner lives, whatever its tasks are doing.

It beats at the interval the store answers, from its own thread, so a task that keeps
the runner busy (a long command, a CPU-bound Python function) does not make the worker
look dead. Each beat extends the worker's leases (in the store) and then checks every
claim the runner holds: a claim that is no longer active under its token (cancelled, or
expired and claimed by someone else) is reported lost, and the runner stops that task.
A store that is unavailable is retried with growing waits that stay within a quarter of
the interval (`retry_wait_s`), so a worker whose store comes back beats again well before
it could be declared stale (1.5 intervals of silence): its own backoff never makes it look
stale. Its tasks keep running through the outage. A store that answers the worker is dead
or offline ends the beats: its claims are gone, its tasks must stop, and the runner
registers a new worker (dead) or stops (offline: an operator deregistered it). A `stale`
worker's beat returns it to idle or busy; so does `beat_now()`, which a lane calls when
the store refuses it a claim.

Limit: a Python task that holds the GIL in native code for longer than the dead window
starves this thread too; command tasks run in their own processes and cannot.
"""

from __future__ import annotations

import logging
import threading

import psutil

from corral.foundation.clock import Clock
from corral.foundation.errors import StoreError, WorkerUnavailable
from corral.foundation.logs import event
from corral.foundation.settings import Settings
from corral.foundation.threads import ThreadService
from corral.model.runs import RunOutcome
from corral.model.states import WorkerStatus
from corral.model.workers import BeatFigures
from corral.runtime.worker import proctree
from corral.runtime.worker.tree_metrics import TreeSampler
from corral.store import Store
from corral.usecases import workers

FIRST_RETRY_S = 0.1
# The outcomes a beat counts as failed: the task's run failed, whatever it is retried as.
FAILURES = frozenset({RunOutcome.FAILED, RunOutcome.TIMEOUT, RunOutcome.KILLED, RunOutcome.STALLED})


def retry_wait_s(failures: int, interval_s: float) -> float:
    """How long to wait before beating again after `failures` failed beats in a row:
    doubling from FIRST_RETRY_S, never past a quarter of the interval."""
    if failures == 0:
        return interval_s
    return min(interval_s / 4, FIRST_RETRY_S * 2.0 ** (failures - 1))


class Heartbeat(ThreadService):
    """Beats for one worker until stopped; exposes drain, dead and lost claims."""

    def __init__(
        self, store: Store, worker_id: str, *, settings: Settings, clock: Clock, log: logging.Logger
    ) -> None:
        super().__init__("corral-heartbeat")
        self._store = store
        self._worker_id = worker_id
        self._settings = settings
        self._clock = clock
        self._log = log
        self.interval_s = settings.heartbeat_interval_s
        self.drain = threading.Event()
        self.dead = threading.Event()  # the store took this worker's claims (dead or offline)
        self.offline = threading.Event()  # ... and it was taken offline: the runner stops
        self._lock = threading.Lock()
        self._held: dict[str, int] = {}
        self._lost: set[str] = set()
        self._process = psutil.Process()
        self._trees = TreeSampler(clock)
        self._ended = [0, 0]  # tasks completed, failed since the last beat the store took
        self._failing_since: float | None = None  # monotonic: since when beats fail

    def start(self) -> None:
        """Beat once now (so the worker is idle, not starting), then from the thread."""
        self._beat()
        super().start()

    def hold(self, task_id: str, token: int) -> None:
        """Watch the claim `token` on `task_id` while its task runs."""
        with self._lock:
            self._held[task_id] = token
            self._lost.discard(task_id)

    def drop(self, task_id: str, outcome: RunOutcome | None = None) -> None:
        """Stop watching `task_id`; its run's `outcome` counts in the next beat's deltas."""
        with self._lock:
            self._held.pop(task_id, None)
            self._lost.discard(task_id)
            if outcome is RunOutcome.DONE:
                self._ended[0] += 1
            elif outcome in FAILURES:
                self._ended[1] += 1

    def holds(self, task_id: str, token: int) -> bool:
        """Whether the claim `token` on `task_id` is watched (the runner knows it holds it)."""
        with self._lock:
            return self._held.get(task_id) == token

    def lost(self, task_id: str) -> bool:
        """True when the claim on `task_id` is no longer ours (or the worker is dead)."""
        with self._lock:
            return task_id in self._lost or self.dead.is_set()

    def beat_now(self) -> None:
        """Beat at once, from the caller's thread: a stale worker is idle or busy again, and
        a dead, offline or draining one is known as such."""
        if not self.dead.is_set():
            self._beat()

    def _run(self) -> None:
        failures = 0
        while not self.stopping.is_set():
            if self._clock.wait(self.stopping, retry_wait_s(failures, self.interval_s)):
                return
            failures = 0 if self._beat() else failures + 1

    def _beat(self) -> bool:
        """One heartbeat and claim check; False when the store could not be reached."""
        figures = self._figures()
        try:
            beat = workers.heartbeat(
                self._store, self._worker_id, figures=figures, settings=self._settings
            )
            self._check_claims()
        except WorkerUnavailable as exc:
            event(
                self._log,
                "worker.declared_gone",
                logging.ERROR,
                worker_id=self._worker_id,
                status=exc.status,
                reason=exc.message,
            )
            if exc.status == WorkerStatus.OFFLINE:
                self.offline.set()
            self.dead.set()
            self.stopping.set()  # the beats end: the store took this worker's claims
            return True
        except StoreError as exc:
            with self._lock:  # not taken: counted again in the next beat
                self._ended[0] += figures.completed
                self._ended[1] += figures.failed
            if self._failing_since is None:  # once per outage, not once per retry
                self._failing_since = self._clock.monotonic()
                event(
                    self._log,
                    "heartbeat.failed",
                    logging.WARNING,
                    worker_id=self._worker_id,
                    error=exc.message,
                )
            return False
        if self._failing_since is not None:
            outage_s = self._clock.monotonic() - self._failing_since
            self._failing_since = None
            event(
                self._log,
                "heartbeat.resumed",
                worker_id=self._worker_id,
                outage_s=round(outage_s, 3),
            )
        self.interval_s = beat.heartbeat_interval_s
        if beat.drain and not self.drain.is_set():
            event(self._log, "worker.drain_requested", worker_id=self._worker_id)
            self.drain.set()
        return True

    def _figures(self) -> BeatFigures:
        """This beat's figures: the runner's own, its tasks' process trees', its active
        claims, and the tasks that ended since the last beat (taken: reset to zero)."""
        with self._lock:
            active, (completed, failed) = len(self._held), self._ended
            self._ended = [0, 0]
        trees = self._trees.sample(proctree.commands())
        return BeatFigures(
            cpu_percent=self._process.cpu_percent(None),
            rss_bytes=self._process.memory_info().rss,
            agent_cpu_percent=None if trees is None else trees.cpu_percent,
            agent_rss_bytes=None if trees is None else trees.rss_bytes,
            active=active,
            completed=completed,
            failed=failed,
        )

    def _check_claims(self) -> None:
        with self._lock:
            held = dict(self._held)
        for task_id, token in held.items():
            claim = self._store.claims.active_claim(task_id)
            if claim is None or claim.token != token:
                with self._lock:
                    self._lost.add(task_id)
