"""Process control from outside (runtime/pool/control.py): stopping a worker's runner or the
orchestrator is refused, drained or signalled according to where the process runs."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from corral import NewWorker, Refused, Store, WorkerStatus, WorkerUnavailable, open_store, register
from corral.foundation.process_keys import WORKER_KEY_ENV, key_digest, new_key
from corral.runtime.pool import control


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A SQLite store on the system clock: signals go to real processes, judged by real times."""
    opened = open_store(str(tmp_path / "corral.db"))
    yield opened
    opened.close()


def _worker(store: Store, **fields: Any) -> str:
    return register(store, NewWorker(name="w1", **fields)).worker.id


def test_a_worker_already_offline_is_refused_naming_its_status(store: Store) -> None:
    """Nothing to stop: Refused, and the message says the worker is offline."""
    worker_id = _worker(store)
    store.workers.deregister_worker(worker_id, reason="test", actor="test")
    with pytest.raises(Refused, match=f"worker {worker_id} is already offline"):
        control.stop_worker(store, worker_id, graceful=True)


def test_a_worker_of_another_host_is_drained_only_when_graceful(store: Store) -> None:
    """Elsewhere: stop now is WorkerUnavailable; --graceful drains it through the store."""
    worker_id = _worker(store, hostname="elsewhere", pid=123)
    with pytest.raises(WorkerUnavailable, match="runs on elsewhere: stop it there"):
        control.stop_worker(store, worker_id, graceful=False)
    stop = control.stop_worker(store, worker_id, graceful=True)
    assert {"id": worker_id, "signal": None, "drain": True} == stop.to_dict()
    assert WorkerStatus.DRAINING == store.workers.get_worker(worker_id).status


def test_a_worker_whose_process_has_ended_is_refused(store: Store) -> None:
    """A recorded pid that no longer runs is not signalled: reconcile returns its tasks."""
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    worker_id = _worker(store, pid=ended.pid)
    with pytest.raises(Refused, match="is not running; `corral reconcile` returns its tasks"):
        control.stop_worker(store, worker_id, graceful=False)


@pytest.mark.parametrize(("graceful", "sent"), [(True, signal.SIGTERM), (False, signal.SIGQUIT)])
def test_a_local_runner_gets_sigterm_when_graceful_else_sigquit(
    store: Store, graceful: bool, sent: signal.Signals
) -> None:
    """The runner's own process receives the signal that asks for the stop wanted (here a
    process started with a key whose hash its worker recorded, as a bash loop opts in)."""
    key = new_key()
    runner = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)"], env={WORKER_KEY_ENV: key}
    )
    try:
        worker_id = _worker(store, pid=runner.pid, key_hash=key_digest(key))
        stop = control.stop_worker(store, worker_id, graceful=graceful)
        assert (-sent, sent.name) == (runner.wait(10), stop.signal)
    finally:
        runner.kill()
        runner.wait()


def test_stopping_no_orchestrator_or_one_elsewhere_is_refused(store: Store) -> None:
    """A stopped row has nothing to stop; a row held on another host must be stopped there."""
    with pytest.raises(Refused, match="no orchestrator is running on this store"):
        control.stop_orchestrator(store, graceful=False, kill_timeout_s=1.0)
    store.orchestrators.acquire_orchestrator(
        pid=10, host="elsewhere", config={}, seen=store.orchestrators.get_orchestrator()
    )
    with pytest.raises(Refused, match=r"runs on elsewhere \(pid 10\): stop it there"):
        control.stop_orchestrator(store, graceful=True, kill_timeout_s=1.0)


def test_the_pool_keeps_its_files_in_the_folder_of_the_store(tmp_path: Path) -> None:
    """Worker logs under logs/workers/ and the pid file beside the SQLite file."""
    db = str(tmp_path / ".corral" / "corral.db")
    assert (
        str(tmp_path / ".corral" / "logs" / "workers" / "slot-1.log"),
        str(tmp_path / ".corral" / "orchestrator.pid"),
    ) == (control.pool_layout(db).log_path("slot-1"), control.pid_file(db))
