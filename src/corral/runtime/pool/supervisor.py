"""The pool supervisor: keep N worker processes running, restart crashes, stop them in order.

The pool is one or more groups (`[[pool.group]]`, corral.foundation.pool_groups), each of
its own number of slots named `GROUP-1` ... with its own worker options; a pool without
groups is one group, `slot`. Each slot is supervised alone: its exit, restart, backoff and
failure are its own, whatever its group's other slots do.

Every change happens on the orchestrator's loop thread, in `tick()`; watcher threads only
queue exits and wake the loop (worker_process.py). On an exit the supervisor, at once:
ends the processes the worker's unfinished runs left behind (found by CORRAL_RUN_ID and
proved by the runs key the worker recorded: foundation/processes.py), then
declares the worker dead in the store (`reconcile.recover_worker`: claims expire, tasks go
back to the queue, the crash is recorded), then schedules the restart `restarts.after_exit`
decides. Stopping a worker is SIGTERM (finish the current task), SIGQUIT when its grace runs
out (give the task back now), SIGKILL `kill_timeout_s` later; each one is logged.
"""

from __future__ import annotations

import logging
import os
import queue
import random
import re
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from corral.foundation.clock import Clock
from corral.foundation.errors import CorralError, StoreError
from corral.foundation.logs import event
from corral.foundation.processes import is_corral_process, process_alive, signal_if_corral
from corral.foundation.settings import Settings
from corral.model.admission import memory_hold
from corral.model.orchestrators import SlotState
from corral.model.restarts import RestartHistory, after_exit
from corral.model.states import WATCHED
from corral.model.workers import Worker
from corral.runtime.pool import worker_process
from corral.runtime.pool.worker_process import Layout, Process
from corral.runtime.worker.admission import available_bytes
from corral.runtime.worker.executor import end_marked_processes
from corral.store import Store
from corral.usecases import reconcile

SLOT_NAME = re.compile(r"(.+)-(\d+)")  # GROUP-N
DEFAULT_GROUP = "slot"  # the one group of a pool without [[pool.group]]
Spawner = Callable[..., Process]  # worker_process.spawn's signature
ORPHAN_GRACE_S = 0.5  # a dead worker's task commands: SIGTERM, then SIGKILL this much later


@dataclass(slots=True)
class Slot:
    """One place in the pool and the worker process that fills it."""

    name: str
    group: str = DEFAULT_GROUP
    state: SlotState = SlotState.STOPPED
    process: Process | None = None
    worker_id: str | None = None
    adopted: bool = False
    started_at: float = 0.0  # monotonic
    history: RestartHistory = field(default_factory=RestartHistory)
    last_exit_code: int | None = None
    due_at: float | None = None  # monotonic: when to start a worker again
    quit_at: float | None = None  # monotonic: SIGQUIT a stopping worker
    kill_at: float | None = None  # monotonic: SIGKILL it

    def to_dict(self) -> dict[str, Any]:
        """The slot as `orchestrator status --json` shows it."""
        return {
            "name": self.name,
            "group": self.group,
            "state": str(self.state),
            "worker_id": self.worker_id,
            "pid": None if self.process is None else self.process.pid,
            "adopted": self.adopted,
            "restarts": self.history.total,
            "last_exit_code": self.last_exit_code,
        }


class Supervisor:
    """The pool of one orchestrator."""

    def __init__(
        self,
        store: Store,
        *,
        settings: Settings,
        env: dict[str, str],
        layout: Layout,
        clock: Clock,
        log: logging.Logger,
        wake: threading.Event,
        spawner: Spawner = worker_process.spawn,
        group_env: Mapping[str, Mapping[str, str]] | None = None,
        memory_mb: Mapping[str, int] | None = None,
        memory_available: Callable[[], int] | None = None,
    ) -> None:
        """`env` is every worker's environment; `group_env` adds to it a group's own
        (its provider account's variables), by group name. `memory_mb` is the memory a run
        of a group's agent states it needs, by group name; `memory_available` reads the
        host's (default psutil's), for the reason a slot holds back (`slot_rows`)."""
        self._memory_mb = memory_mb or {}
        self._memory_available = memory_available
        self._store, self._settings, self._env, self._layout = store, settings, env, layout
        self._group_env = group_env or {}
        self._spawner = spawner  # tests hand in fake processes
        self._pool, self._policy = settings.pool, settings.process
        self._clock, self._log, self._wake = clock, log, wake
        self._exits: queue.SimpleQueue[tuple[int, int | None]] = queue.SimpleQueue()
        self._host = os.uname().nodename  # workers record the real host name
        self._rng = random.Random()
        self._groups = {g.name: g for g in self._pool.groups}
        self.slots = [
            Slot(name=f"{g.name}-{n}", group=g.name)
            for g in self._pool.groups
            for n in range(1, g.workers + 1)
        ]
        self._unrecovered: list[tuple[str, int]] = []  # (slot, pid) exited while the store was out
        self.stopping = False

    # -- start -----------------------------------------------------------------------

    def start(self) -> None:
        """Adopt the live workers of this host's slots, recover dead ones, spawn the rest."""
        by_name = {slot.name: slot for slot in self.slots}
        for worker in self._store.workers.list_workers(tuple(WATCHED)):
            if worker.hostname != self._host or not self._pools_name(worker.name):
                continue
            alive = process_alive(worker.pid, worker.registered_at.timestamp())
            slot = by_name.get(worker.name)
            if alive and slot is not None and slot.process is None:
                self._adopt(slot, worker)
            elif alive and worker.pid is not None:  # beyond the pool's size now
                self._stop_surplus(worker)
            elif not alive:
                self._recover(worker, f"process {worker.pid} is gone (found at start)")
        for slot in self.slots:
            if slot.process is None:
                self._spawn(slot)

    def _pools_name(self, name: str) -> bool:
        """Whether a worker of this name is one of this pool's slots, now or under an
        earlier configuration (a group's, or the groupless pool's `slot-N`)."""
        match = SLOT_NAME.fullmatch(name)
        return match is not None and match[1] in {*self._groups, DEFAULT_GROUP}

    def _adopt(self, slot: Slot, worker: Worker) -> None:
        """Watch the slot's worker, if its pid is provably that worker
        (corral.foundation.processes): the pidfd is opened first, so the process checked is
        the one signalled later."""
        assert worker.pid is not None
        process = worker_process.watch(worker.pid, self._on_exit, proven=lambda: _proven(worker))
        if process is None and process_alive(worker.pid, worker.registered_at.timestamp()):
            event(self._log, "worker.not_ours", worker_id=worker.id, pid=worker.pid)
            return
        if process is None:
            self._recover(worker, f"process {worker.pid} is gone (found at start)")
            return
        slot.process, slot.worker_id, slot.adopted = process, worker.id, True
        slot.state, slot.started_at = SlotState.RUNNING, self._clock.monotonic()
        event(self._log, "worker.adopted", slot=slot.name, worker_id=worker.id, pid=worker.pid)

    def _stop_surplus(self, worker: Worker) -> None:
        """SIGTERM a worker beyond the pool's size, if its pid is provably that worker."""
        assert worker.pid is not None
        sent = signal_if_corral(
            worker.pid,
            signal.SIGTERM,
            key_hash=worker.key_hash,
            started_s=worker.pid_started_at,
            registered_at_s=worker.registered_at.timestamp(),
        )
        name = "worker.surplus" if sent else "worker.not_ours"
        event(self._log, name, worker_id=worker.id, pid=worker.pid)

    def _spawn(self, slot: Slot) -> None:
        slot.process = self._spawner(
            slot.name,
            options=self._groups[slot.group].options,
            env={**self._env, **self._group_env.get(slot.group, {})},
            layout=self._layout,
            on_exit=self._on_exit,
        )
        slot.state, slot.worker_id, slot.adopted = SlotState.STARTING, None, False
        slot.started_at, slot.due_at = self._clock.monotonic(), None
        event(self._log, "worker.spawned", slot=slot.name, group=slot.group, pid=slot.process.pid)

    def _on_exit(self, pid: int, exit_code: int | None) -> None:
        """Called from watcher threads: hand the exit to the loop thread."""
        self._exits.put((pid, exit_code))
        self._wake.set()

    # -- the loop's work -----------------------------------------------------------------

    def tick(self) -> bool:
        """Handle exits, due restarts and due signals; True if any slot changed."""
        changed = False
        while not self._exits.empty():
            pid, exit_code = self._exits.get()
            changed |= self._exited(pid, exit_code)
        now = self._clock.monotonic()
        for slot in self.slots:
            changed |= self._due(slot, now)
        return changed

    def next_due(self) -> float | None:
        """The monotonic instant of the next timed action, if any."""
        times = [
            t
            for slot in self.slots
            for t in (slot.due_at, slot.quit_at, slot.kill_at)
            if t is not None
        ]
        return min(times, default=None)

    def starting(self) -> bool:
        """Whether a slot's worker has been started and has not registered yet."""
        return any(slot.state is SlotState.STARTING for slot in self.slots)

    def note_registrations(self) -> bool:
        """Mark starting slots running once their worker has registered; True if any did."""
        starting = {
            s.process.pid: s for s in self.slots if s.state is SlotState.STARTING and s.process
        }
        if not starting:
            return False
        changed = False
        for worker in self._store.workers.list_workers(tuple(WATCHED)):
            slot = starting.get(worker.pid or -1)
            if slot is not None and worker.name == slot.name and worker.hostname == self._host:
                slot.state, slot.worker_id, changed = SlotState.RUNNING, worker.id, True
        return changed

    def slot_rows(self) -> list[dict[str, Any]]:
        """Each slot as the state row records it; a running slot whose agent needs more
        memory than the host has now says why it holds back (`held`), as its worker,
        reading the same figure, claims nothing (corral.model.admission)."""
        rows = [slot.to_dict() for slot in self.slots]
        if not self._memory_mb:
            return rows
        available = (self._memory_available or available_bytes)()
        for slot, row in zip(self.slots, rows, strict=True):
            reason = memory_hold(self._memory_mb.get(slot.group), available)
            if reason is not None and slot.state is SlotState.RUNNING:
                row["held"] = reason
        return rows

    def slot_of(self, worker_id: str) -> str | None:
        """The name of the slot worker `worker_id` runs in, if it is one of this pool's.

        Called from the task-lines thread: it only reads slot attributes. A worker that
        claims before the loop noted its registration is found by its record: this host,
        the slot's name, the slot's process.
        """
        for slot in self.slots:
            if slot.worker_id == worker_id:
                return slot.name
        try:
            worker = self._store.workers.get_worker(worker_id)
        except CorralError:
            return None
        for slot in self.slots:
            process = slot.process
            if (
                process is not None
                and worker.name == slot.name
                and worker.pid == process.pid
                and worker.hostname == self._host
            ):
                return slot.name
        return None

    def _due(self, slot: Slot, now: float) -> bool:
        if slot.due_at is not None and now >= slot.due_at and not self.stopping:
            if slot.state is SlotState.FAILED:
                event(self._log, "slot.replaced", logging.WARNING, slot=slot.name)
            self._spawn(slot)
            return True
        process = slot.process
        if process is not None and slot.kill_at is not None and now >= slot.kill_at:
            slot.kill_at = slot.quit_at = None
            event(self._log, "worker.sigkill", logging.WARNING, slot=slot.name, pid=process.pid)
            process.signal(signal.SIGKILL)
        elif process is not None and slot.quit_at is not None and now >= slot.quit_at:
            slot.quit_at = None
            event(self._log, "worker.sigquit", slot=slot.name, pid=process.pid)
            process.signal(signal.SIGQUIT)
        return False

    def _exited(self, pid: int, exit_code: int | None) -> bool:
        slot = next((s for s in self.slots if s.process and s.process.pid == pid), None)
        if slot is None or slot.process is None:
            return False
        slot.process.close()
        slot.process, slot.quit_at, slot.kill_at = None, None, None
        slot.last_exit_code = exit_code
        level = logging.INFO if exit_code == 0 or self.stopping else logging.WARNING
        event(self._log, "worker.exited", level, slot=slot.name, pid=pid, exit_code=exit_code)
        self._recover_pid(slot.name, pid)
        if self.stopping:
            slot.state = SlotState.STOPPED
        else:
            self._schedule_restart(slot)
        return True

    def _schedule_restart(self, slot: Slot) -> None:
        """Back off, or fail the slot, as `restarts.after_exit` decides."""
        uptime_s = self._clock.monotonic() - slot.started_at
        clean = slot.last_exit_code == 0
        decision = after_exit(slot.history, uptime_s, self._policy, clean=clean)
        slot.history = decision.history
        slot.state = SlotState.FAILED if decision.failed else SlotState.BACKOFF
        slot.due_at = self._clock.monotonic() + decision.delay_s
        name = "slot.failed" if decision.failed else "worker.restart_scheduled"
        event(
            self._log,
            name,
            logging.ERROR if decision.failed else logging.INFO,
            slot=slot.name,
            delay_s=round(decision.delay_s, 3),
            restarts=slot.history.total,
        )

    # -- recovery ------------------------------------------------------------------------

    def _recover_pid(self, name: str, pid: int) -> None:
        """Return the tasks of the worker that ran as `pid` in slot `name` to the queue.

        A store that cannot be reached now is not fatal: the worker is recovered once the
        store is back (`recover_pending`), or a reconcile pass declares it dead meanwhile.
        """
        try:
            self._recover_exited(name, pid)
        except StoreError as exc:
            event(self._log, "worker.recover_failed", logging.WARNING, pid=pid, error=exc.message)
            self._unrecovered.append((name, pid))

    def recover_pending(self) -> None:
        """Recover the workers that exited while the store was out (StoreError: still out)."""
        while self._unrecovered:
            self._recover_exited(*self._unrecovered[0])
            self._unrecovered.pop(0)

    def _recover_exited(self, name: str, pid: int) -> None:
        for worker in self._store.workers.list_workers(tuple(WATCHED)):
            if worker.name == name and worker.pid == pid and worker.hostname == self._host:
                self._recover(worker, f"process {pid} exited")

    def _recover(self, worker: Worker, reason: str) -> None:
        for run in self._store.runs.unfinished_runs(worker.id):
            ended = end_marked_processes(
                run.id, worker.runs_key_hash, clock=self._clock, grace_s=ORPHAN_GRACE_S
            )
            if ended:
                event(self._log, "run.orphans_ended", run_id=run.id, processes=ended)
        report = reconcile.recover_worker(
            self._store, worker.id, reason=reason, settings=self._settings, rng=self._rng
        )
        repaired = {name: n for name, n in report.to_dict().items() if n}
        if repaired:
            event(self._log, "worker.recovered", worker_id=worker.id, **repaired)

    # -- stop ----------------------------------------------------------------------------

    def stop(self, grace_s: float) -> None:
        """SIGTERM every worker; SIGQUIT after `grace_s`, SIGKILL after kill_timeout_s more.

        Called again (a second Ctrl-C), it only brings the SIGQUIT still to come forward.
        """
        self.stopping = True
        now = self._clock.monotonic()
        for slot in self.slots:
            slot.due_at = None
            if slot.process is None:
                slot.state = SlotState.STOPPED
            elif slot.state is not SlotState.STOPPING:
                slot.state, slot.quit_at = SlotState.STOPPING, now + grace_s
                slot.kill_at = slot.quit_at + self._policy.kill_timeout_s
                event(self._log, "worker.sigterm", slot=slot.name, pid=slot.process.pid)
                slot.process.signal(signal.SIGTERM)
            elif slot.quit_at is not None and now + grace_s < slot.quit_at:
                slot.quit_at = now + grace_s
                slot.kill_at = slot.quit_at + self._policy.kill_timeout_s

    def all_stopped(self) -> bool:
        """True once every worker process has exited and been handled."""
        return all(slot.process is None for slot in self.slots)

    def rotate_logs(self) -> None:
        """Rotate each slot's log file that has reached its size limit."""
        for slot in self.slots:
            worker_process.rotate_log(
                self._layout.log_path(slot.name),
                max_bytes=self._policy.log_max_bytes,
                backups=self._policy.log_backups,
            )


def _proven(worker: Worker) -> bool:
    """Whether the worker's pid is still the worker that registered
    (corral.foundation.processes)."""
    assert worker.pid is not None
    return is_corral_process(
        worker.pid,
        key_hash=worker.key_hash,
        started_s=worker.pid_started_at,
        registered_at_s=worker.registered_at.timestamp(),
    )
