"""The orchestrator: hold the store's state row, run the pool, reconcile, stop in order.

On PostgreSQL several run at once, one per host: each joins as a member and runs its
pool; the one holding the leader lock takes the state row and reconciles, the others
stand by and try the lock every reconcile interval (runtime/pool/leadership.py). Below, "take
the row" is then "join, and lead once the lock is ours".

    take the row (compare-and-set; a dead holder is replaced, a live one refuses us)
      ─► adopt / spawn the pool ─► reconcile once at once ─► running
      ─► loop: wait (on the clock) for an exit, a signal or the next due time;
               tick the pool; reconcile every reconcile_interval_s; beat the row
      ─► SIGTERM/SIGINT (or `orchestrator stop`): stopping; workers get SIGTERM and finish
         their task within the stop timeout, then SIGQUIT, then SIGKILL ─► stopped, exit 0
      SIGQUIT or a second SIGINT: the same with no time for tasks.

The loop sleeps only in `clock.wait(wake, ...)`; watcher threads and signal handlers set
`wake`, so an exit is handled as it happens. Exit codes: 0 stopped cleanly; 1 another
orchestrator holds the store, or this one lost the row; 2 configuration error.
"""

from __future__ import annotations

import logging
import os
import random
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from corral import reconcile
from corral.clock import Clock, SystemClock
from corral.errors import CorralError, InvalidInput, Refused, StoreError
from corral.git.prune import prune_if_managed
from corral.logs import event, logger
from corral.model.orchestrators import (
    STOPPABLE,
    OrchestratorState,
    OrchestratorStatus,
    holder_is_dead,
)
from corral.processes import process_alive
from corral.runtime.pool import leftovers, worker_process
from corral.runtime.pool.leadership import Leadership
from corral.runtime.pool.supervisor import Supervisor
from corral.runtime.pool.worker_process import Layout
from corral.runtime.worker.tmp import prune_tmp
from corral.settings import Settings
from corral.store import Store

DEFAULT_STOP_TIMEOUT_S = 300.0
_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)


@dataclass(frozen=True, slots=True, kw_only=True)
class Placement:
    """Where this orchestrator runs and what it hands its workers."""

    db: str
    config_path: str
    layout: Layout
    host: str


class AlreadyRunning(Refused):
    """Another orchestrator holds this store."""


class Orchestrator:
    """One orchestrator process; `run()` returns its exit code."""

    def __init__(
        self,
        store: Store,
        *,
        settings: Settings,
        placement: Placement,
        clock: Clock | None = None,
        log: logging.Logger | None = None,
    ) -> None:
        if not settings.pool.exec.strip():
            raise InvalidInput("exec", "the command pool workers run (--exec or pool.exec)")
        self._store, self._settings, self._place = store, settings, placement
        self._clock = clock or SystemClock()
        self._log = log or logger("corral.orchestrator")
        self._wake = threading.Event()
        self._stop_grace_s: float | None = None
        self._reconciled = False  # a pass ran since the last beat
        self._pid = os.getpid()
        self._rng = random.Random()
        lock = store.leader_lock()
        # PostgreSQL: one of several orchestrators, leading while it holds the lock. SQLite:
        # the only one, leading once it holds the state row.
        self._leadership = (
            None
            if lock is None
            else Leadership(
                store,
                lock,
                pid=self._pid,
                host=placement.host,
                liveness=settings.liveness,
                pid_alive=process_alive,
            )
        )
        self._leads = False
        self.supervisor = Supervisor(
            store,
            settings=settings,
            env=self._worker_env(),
            layout=placement.layout,
            clock=self._clock,
            log=self._log,
            wake=self._wake,
        )

    def _worker_env(self) -> dict[str, str]:
        env = worker_process.filter_env(os.environ, self._settings.env)
        env["CORRAL_DB"] = self._place.db
        env.pop("CORRAL_CONFIG", None)
        if os.path.isfile(self._place.config_path):
            env["CORRAL_CONFIG"] = self._place.config_path
        return env

    # -- the row -------------------------------------------------------------------------

    def acquire(self) -> OrchestratorState:
        """Take the state row, replacing a dead holder; AlreadyRunning if a live one has it."""
        seen = self._store.get_orchestrator()
        if seen.status is not OrchestratorStatus.STOPPED and not holder_is_dead(
            seen,
            now=self._store.now(),
            host=self._place.host,
            pid_alive=lambda pid: _holder_alive(pid, seen),
            policy=self._settings.liveness,
        ):
            raise _already_running(seen)
        taken = self._store.acquire_orchestrator(
            pid=self._pid, host=self._place.host, config=self._config(), seen=seen
        )
        if taken is None:
            raise _already_running(self._store.get_orchestrator())
        if seen.status is not OrchestratorStatus.STOPPED:
            event(self._log, "orchestrator.took_over", previous_pid=seen.pid, host=seen.host)
        return taken

    def _config(self) -> dict[str, Any]:
        s = self._settings
        return {
            "workers": s.pool.workers,
            "exec": s.pool.exec,
            "kinds": list(s.pool.kinds),
            "queues": list(s.pool.queues),
            "reconcile_interval_s": s.reconcile_interval_s,
            "heartbeat_interval_s": s.heartbeat_interval_s,
            "restart_delay_s": s.restart_delay_s,
            "max_restart_delay_s": s.max_restart_delay_s,
            "max_restarts": s.max_restarts,
            "min_uptime_s": s.min_uptime_s,
            "kill_timeout_s": s.kill_timeout_s,
            "db": self._place.db,
        }

    def _move(self, to: OrchestratorStatus, allowed: frozenset[str]) -> None:
        self._store.set_orchestrator_status(
            pid=self._pid, host=self._place.host, to=to, allowed=allowed
        )
        event(self._log, f"orchestrator.{to}", pid=self._pid)

    # -- run -----------------------------------------------------------------------------

    def run(self, on_held: Callable[[], None] | None = None) -> int:
        """Take the row (or, on PostgreSQL, join as a member), run the pool until told to
        stop, stop it; the exit code.

        `on_held` runs once the row is ours (the CLI writes its pid file then).
        """
        if self._leadership is None:
            self.acquire()
            self._leads = True
        else:
            self._leadership.join()
        if on_held is not None:
            on_held()
        previous = self._install_signals()
        try:
            return self._run_held()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _run_held(self) -> int:
        event(self._log, "orchestrator.starting", pid=self._pid, workers=len(self.supervisor.slots))
        self.supervisor.start()
        if self._leads:
            self._start_leading()
        else:
            self._try_lead()
        held = self._loop()
        if held:
            self._stop_pool()
            if self._leads:
                self._move(OrchestratorStatus.STOPPED, frozenset({OrchestratorStatus.STOPPING}))
        if self._leadership is not None:
            self._leadership.leave()
        return 0 if held else 1

    def _start_leading(self) -> None:
        """Now holding the row (status starting): a pass at once, then running."""
        self._reconcile()
        self._move(OrchestratorStatus.RUNNING, frozenset({OrchestratorStatus.STARTING}))

    # -- leadership (PostgreSQL) -----------------------------------------------------------

    def _try_lead(self) -> None:
        """A standby's try: the lock and the row, and then it leads."""
        assert self._leadership is not None
        try:
            taken = self._leadership.try_lead(self._config())
        except StoreError as exc:
            event(self._log, "orchestrator.lead_failed", logging.WARNING, error=exc.message)
            return
        if taken is None:
            return
        self._leads = True
        event(self._log, "orchestrator.leading", pid=self._pid, host=self._place.host)
        self._start_leading()

    def _step_down(self, why: str) -> None:
        """Leader no more (the lock or the row went to another): stand by."""
        assert self._leadership is not None
        self._leads = False
        self._leadership.step_down()
        event(self._log, "orchestrator.standing_by", logging.WARNING, pid=self._pid, reason=why)

    def _on_interval(self) -> None:
        """Each reconcile interval: the leader reconciles (if it still leads); a standby
        tries to lead; every orchestrator cleans up what its host's dead workers left."""
        if self._leadership is not None and self._leads and not self._leadership.still_leads():
            self._step_down("leader lock lost")
        if self._leads:
            self._reconcile()
        elif self._leadership is not None:
            self._try_lead()
            if not self._leads:
                self._clean_up()

    def _loop(self) -> bool:
        """Until a stop is asked; False if another orchestrator took the row meanwhile."""
        beat_s = self._settings.heartbeat_interval_s
        next_reconcile = self._clock.monotonic() + self._settings.reconcile_interval_s
        next_beat = self._clock.monotonic()
        while self._stop_grace_s is None:
            due = min(next_reconcile, next_beat, self.supervisor.next_due() or next_beat)
            self._clock.wait(self._wake, max(0.0, due - self._clock.monotonic()))
            self._wake.clear()
            changed = self.supervisor.tick()
            now = self._clock.monotonic()
            if now >= next_reconcile:
                self._on_interval()
                next_reconcile = now + self._settings.reconcile_interval_s
            if changed or self._reconciled or now >= next_beat:
                if not self._beat():
                    return False
                # While a worker has yet to register, look again soon: status shows it.
                next_beat = now + (min(beat_s, 0.25) if self.supervisor.starting() else beat_s)
        return True

    def _beat(self) -> bool:
        """Note registrations, rotate logs, beat the row; False once the row is not ours.

        A store that cannot be reached now costs one beat, not the pool: the next one retries.
        """
        self.supervisor.rotate_logs()
        try:
            self.supervisor.note_registrations()
            held = self._beat_rows()
        except StoreError as exc:
            event(self._log, "orchestrator.beat_failed", logging.WARNING, error=exc.message)
            return True
        self._reconciled = False
        if not held:  # a newer orchestrator judged us dead: it adopts our workers
            event(self._log, "orchestrator.row_lost", logging.ERROR, pid=self._pid)
        return held

    def _beat_rows(self) -> bool:
        """Beat the state row while leading and the member row if any; False once a row
        that makes this orchestrator what it is went to another."""
        if self._leads and not self._store.beat_orchestrator(
            pid=self._pid,
            host=self._place.host,
            slots=[slot.to_dict() for slot in self.supervisor.slots],
            reconciled=self._reconciled,
        ):
            if self._leadership is None:
                return False
            self._step_down("state row taken by another leader")
        if self._leadership is None:
            return True
        stopping = self._stop_grace_s is not None
        return self._leadership.beat(
            OrchestratorStatus.STOPPING if stopping else OrchestratorStatus.RUNNING
        )

    def _reconcile(self) -> None:
        try:
            report = reconcile.reconcile_once(self._store, settings=self._settings, rng=self._rng)
        except CorralError as exc:  # the store is briefly unavailable: next pass
            event(self._log, "reconcile.failed", logging.WARNING, error=exc.message)
            return
        if report.total:
            counts = {k: v for k, v in report.to_dict().items() if v}
            event(self._log, "reconcile.repaired", **counts)
        self._reconciled = True  # the next beat records the pass
        self._clean_up()

    def _clean_up(self) -> None:
        """What finished runs and dead workers left on this host: processes, temporary
        directories, and orphaned worktrees of the repository the orchestrator runs in
        (as `corral reconcile` removes them)."""
        for leftover in leftovers.end(self._store, clock=self._clock):
            event(self._log, "run.leftover_ended", pid=leftover.pid, run_id=leftover.run_id)
        for path in prune_tmp(self._place.db):
            event(self._log, "worker.tmp_removed", path=path)
        try:
            pruned = prune_if_managed(self._store, os.getcwd(), self._settings.worktree)
        except CorralError as exc:
            event(self._log, "worktree.prune_failed", logging.WARNING, error=exc.message)
            return
        for path in pruned.removed if pruned else ():
            event(self._log, "worktree.removed", path=path)

    # -- stop ----------------------------------------------------------------------------

    def request_stop(self, grace_s: float) -> None:
        """Stop the pool, giving running tasks up to `grace_s` (0: give them back now)."""
        current = self._stop_grace_s
        self._stop_grace_s = grace_s if current is None else min(current, grace_s)
        self._wake.set()

    def _stop_pool(self) -> None:
        grace_s = self._stop_grace_s or 0.0
        if self._leads:
            state = self._store.get_orchestrator()
            if state.status is not OrchestratorStatus.STOPPING:
                self._move(OrchestratorStatus.STOPPING, STOPPABLE)
            if state.stop_timeout_s is not None:  # `orchestrator stop --timeout` said how long
                grace_s = min(grace_s, state.stop_timeout_s)
        event(self._log, "orchestrator.stopping", grace_s=grace_s)
        self.supervisor.stop(grace_s)
        # A leader keeps reconciling while its pool drains: the grace can be long, and
        # other hosts' or bash loops' dead workers must not wait for it to end.
        next_reconcile = self._clock.monotonic() + self._settings.reconcile_interval_s
        while not self.supervisor.all_stopped():
            due = min(self.supervisor.next_due() or next_reconcile, next_reconcile)
            self._clock.wait(self._wake, max(0.0, due - self._clock.monotonic()))
            self._wake.clear()
            if (self._stop_grace_s or 0.0) < grace_s:  # asked again, more urgently
                grace_s = self._stop_grace_s or 0.0
                self.supervisor.stop(grace_s)
            self.supervisor.tick()
            if self._leads and self._clock.monotonic() >= next_reconcile:
                self._reconcile()
                next_reconcile = self._clock.monotonic() + self._settings.reconcile_interval_s
            self._beat()
        self._beat()

    def _install_signals(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        return {sig: signal.signal(sig, self._on_signal) for sig in _SIGNALS}

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        immediate = signum == signal.SIGQUIT or (
            signum == signal.SIGINT and self._stop_grace_s is not None
        )
        event(self._log, "orchestrator.signal", signal=signal.Signals(signum).name)
        self.request_stop(0.0 if immediate else DEFAULT_STOP_TIMEOUT_S)


def _holder_alive(pid: int, seen: OrchestratorState) -> bool:
    """Whether `pid` still runs and is the process that took the row (not a reused pid)."""
    started_s = seen.started_at.timestamp() if seen.started_at else 0.0
    return process_alive(pid, started_s)


def _already_running(state: OrchestratorState) -> AlreadyRunning:
    return AlreadyRunning(
        f"an orchestrator is already {state.status} on this store "
        f"(pid {state.pid} on {state.host}); stop it first: corral orchestrator stop"
    )
