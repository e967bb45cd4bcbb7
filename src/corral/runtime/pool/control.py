"""Process control from outside: stop a worker's runner, stop the orchestrator and wait for
it, start the orchestrator detached. The CLI calls these, and so will the HTTP server.

Each function returns a record, or raises a CorralError that says why not (Refused: the
state does not allow it; WorkerUnavailable: the process cannot be reached from here).
Signals only reach processes of this host, and only a pid that is provably still the
recorded corral process (corral.foundation.processes: its user, its start time and its
key): a runner elsewhere is drained through the store instead; an orchestrator elsewhere
must be stopped there.

    worker stop:        SIGQUIT (stop now) or, graceful, SIGTERM (finish the current task)
    orchestrator stop:  mark the row stopping with the grace, SIGTERM, wait until the row
                        is stopped (or taken by a standby) or the process is gone

The pool's files live in the store's folder (`.corral/`): the pid file, the daemon's log
and one log per worker slot.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from corral.foundation import filemodes
from corral.foundation.clock import Clock, SystemClock
from corral.foundation.errors import Refused, WorkerUnavailable
from corral.foundation.process_keys import ORCHESTRATOR_KEY_ENV, WORKER_KEY_ENV, new_key
from corral.foundation.processes import (
    is_corral_process,
    process_alive,
    signal_if_corral,
    signal_if_proven,
)
from corral.model.orchestrators import (
    DEFAULT_STOP_TIMEOUT_S,
    OrchestratorState,
    OrchestratorStatus,
)
from corral.model.states import GONE
from corral.runtime.pool.worker_process import Layout
from corral.store import Store
from corral.store.location import state_dir
from corral.usecases import workers

# Beyond the grace and the kill timeout: the orchestrator's own exit after its pool's.
STOP_MARGIN_S = 30.0
DAEMON_START_TIMEOUT_S = 30.0
POLL_S = 0.05
PID_FILE = "orchestrator.pid"
LOG_FILE = os.path.join("logs", "orchestrator.log")


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerStop:
    """How a worker was asked to stop: `signal` sent to its runner, or (None) drained."""

    worker_id: str
    pid: int | None
    signal: str | None

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `worker stop --json` (docs/cli.md)."""
        return {"id": self.worker_id, "signal": self.signal, "drain": self.signal is None}


@dataclass(frozen=True, slots=True, kw_only=True)
class OrchestratorStop:
    """A stopped orchestrator: its pid, and the state row once it had stopped."""

    pid: int
    state: OrchestratorState

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `orchestrator stop --json`: the row (docs/cli.md)."""
        return self.state.to_dict()


@dataclass(frozen=True, slots=True, kw_only=True)
class Daemon:
    """An orchestrator started in the background: its pid and its log file."""

    pid: int
    log: str

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `orchestrator start --daemon --json` (docs/cli.md)."""
        return {"pid": self.pid, "log": self.log}


def pool_layout(db: str) -> Layout:
    """Where the pool of store `db` writes its workers' logs: `logs/workers/` in its folder."""
    return Layout(logs_dir=os.path.join(state_dir(db), "logs", "workers"))


def pid_file(db: str) -> str:
    """The file that holds the pid of the orchestrator running here on store `db`."""
    return os.path.join(state_dir(db), PID_FILE)


def stop_worker(store: Store, worker_id: str, *, graceful: bool) -> WorkerStop:
    """Stop a worker's runner: SIGTERM if `graceful` (it finishes its task), else SIGQUIT.

    A worker of another host (or with no pid) can only be drained through the store, and
    only when `graceful`; otherwise WorkerUnavailable.
    """
    worker = store.workers.get_worker(worker_id)
    if worker.status in GONE:
        raise Refused(f"worker {worker.id} is already {worker.status}")
    if worker.hostname != os.uname().nodename or worker.pid is None:
        if not graceful:
            raise WorkerUnavailable(
                f"worker {worker.id} runs on {worker.hostname}: stop it there, "
                "or use --graceful to drain it through the store"
            )
        workers.drain(store, worker.id)
        return WorkerStop(worker_id=worker.id, pid=worker.pid, signal=None)
    gone = Refused(
        f"process {worker.pid} of worker {worker.id} is not running; "
        "`corral reconcile` returns its tasks to the queue"
    )
    if not process_alive(worker.pid, worker.registered_at.timestamp()):
        raise gone
    sig = signal.SIGTERM if graceful else signal.SIGQUIT
    sent = signal_if_corral(
        worker.pid,
        sig,
        key_hash=worker.key_hash,
        started_s=worker.pid_started_at,
        registered_at_s=worker.registered_at.timestamp(),
    )
    if not sent:
        raise Refused(
            f"process {worker.pid} is not provably worker {worker.id} (not this user's, or "
            f"its environment holds no {WORKER_KEY_ENV} whose hash the worker recorded): "
            "not signalled"
        )
    return WorkerStop(worker_id=worker.id, pid=worker.pid, signal=sig.name)


def stop_orchestrator(
    store: Store,
    *,
    graceful: bool,
    timeout_s: float | None = None,
    kill_timeout_s: float,
    clock: Clock | None = None,
) -> OrchestratorStop:
    """Stop the orchestrator of this host and wait until it has stopped.

    `graceful` lets running tasks finish for up to `timeout_s` (default 5 minutes); else
    they are given back at once. Waits for the grace, the pool's `kill_timeout_s` and a
    margin; Refused if it is not running here, or has not stopped by then.
    """
    grace_s = (DEFAULT_STOP_TIMEOUT_S if timeout_s is None else timeout_s) if graceful else 0.0
    state = store.orchestrators.get_orchestrator()
    if state.status is OrchestratorStatus.STOPPED:
        raise Refused("no orchestrator is running on this store (it is stopped)")
    if state.host != os.uname().nodename or state.pid is None:
        raise Refused(f"the orchestrator runs on {state.host} (pid {state.pid}): stop it there")
    started_s = state.started_at.timestamp() if state.started_at else 0.0
    if not process_alive(state.pid, started_s):
        raise Refused(
            f"the orchestrator (pid {state.pid}) is not running; the next start takes its place"
        )
    pid = state.pid
    proven = functools.partial(
        is_corral_process,
        pid,
        key_hash=state.key_hash,
        started_s=None,
        registered_at_s=started_s,
        env_name=ORCHESTRATOR_KEY_ENV,
    )
    if not proven():
        raise Refused(
            f"process {pid} is not provably corral's orchestrator (not this user's, or its "
            f"environment holds no {ORCHESTRATOR_KEY_ENV} whose hash the row records): "
            "not signalled"
        )
    store.orchestrators.request_orchestrator_stop(stop_timeout_s=grace_s)
    if not signal_if_proven(pid, signal.SIGTERM, proven):
        raise Refused(f"the orchestrator (pid {pid}) has gone: not signalled")
    clock = clock or SystemClock()
    deadline = clock.monotonic() + grace_s + kill_timeout_s + STOP_MARGIN_S
    final = store.orchestrators.get_orchestrator()
    while _still_held(final, state) and clock.monotonic() < deadline:
        if not process_alive(state.pid, started_s):
            # Read after the exit: the row it wrote as it stopped, not the one read before.
            final = store.orchestrators.get_orchestrator()
            break
        clock.sleep(POLL_S)
        final = store.orchestrators.get_orchestrator()
    if _still_held(final, state):
        raise Refused(f"the orchestrator (pid {state.pid}) did not stop; it is {final.status}")
    return OrchestratorStop(pid=state.pid, state=final)


def _still_held(now: OrchestratorState, stopping: OrchestratorState) -> bool:
    """Whether the row is still the stopping orchestrator's and not stopped. On PostgreSQL a
    standby may take the row the moment it is stopped: the stop has happened then too."""
    same = (now.pid, now.host, now.started_at) == (
        stopping.pid,
        stopping.host,
        stopping.started_at,
    )
    return same and now.status is not OrchestratorStatus.STOPPED


def daemonize(store: Store, *, db: str, argv: list[str], clock: Clock | None = None) -> Daemon:
    """Run `corral ARGV` (an `orchestrator start` without --daemon) detached, its output in
    `logs/orchestrator.log`; return once it holds the state row or, on PostgreSQL, has
    joined the store's orchestrators. Refused (with its reason) if it exits first, or if it
    is not up within 30 s."""
    log_path = os.path.join(state_dir(db), LOG_FILE)
    filemodes.make_dirs(os.path.dirname(log_path))
    with open(filemodes.append(log_path), "ab") as log:
        # S603: a corral command line, run by this same interpreter.
        child = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", "corral.cli.main", *argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={
                **os.environ,
                "CORRAL_DB": db,
                "CORRAL_NAMESPACE": store.namespace,
                ORCHESTRATOR_KEY_ENV: new_key(),
            },
            start_new_session=True,
        )
    clock = clock or SystemClock()
    deadline = clock.monotonic() + DAEMON_START_TIMEOUT_S
    while clock.monotonic() < deadline:
        if child.poll() is not None:
            raise Refused(f"the orchestrator exited at once: {_last_line(log_path)}")
        if _is_up(store, child.pid):
            return Daemon(pid=child.pid, log=log_path)
        clock.sleep(POLL_S)
    raise Refused(f"the orchestrator did not start within 30 s; see {log_path}")


def _is_up(store: Store, pid: int) -> bool:
    """Whether orchestrator `pid` holds the state row, or runs as a member (PostgreSQL:
    another orchestrator may lead; this one joined)."""
    state = store.orchestrators.get_orchestrator()
    if state.pid == pid and state.status is OrchestratorStatus.RUNNING:
        return True
    return any(
        m.pid == pid and m.status is OrchestratorStatus.RUNNING
        for m in store.orchestrators.list_orchestrators()
    )


def _last_line(path: str) -> str:
    """The log's last line without the `corral: error: ` prefix (the child's reason)."""
    with open(path, "rb") as handle:
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4096))
        lines = handle.read().decode(errors="replace").strip().splitlines()
    return (lines[-1] if lines else f"see {path}").removeprefix("corral: error: ")
