"""Orchestrators for the pool benchmarks: start one on a throwaway store, wait, stop it.

The orchestrator is `python -m corral.cli.main orchestrator start` in a session of its
own, its log beside the store; `running()` always stops it (and kills what is left).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import psutil

from corral import TaskFilter, TaskStatus
from corral.store import Store
from measure import fresh_process_env

# Short restart delays and no retry wait: benchmarks kill workers on purpose, many times.
POOL_ENV = {
    "CORRAL_HEARTBEAT_INTERVAL_S": "1",
    "CORRAL_RESTART_DELAY_S": "0.1",
    "CORRAL_MAX_RESTART_DELAY_S": "0.2",
    "CORRAL_MAX_RESTARTS": "1000",
    "CORRAL_MAX_CRASHES": "1000",
    "CORRAL_MAX_ATTEMPTS": "1000",
    "CORRAL_RETRY_BASE_S": "0",
}


def pool_env(db: str) -> dict[str, str]:
    """The environment of the orchestrator and of the commands run against its store."""
    return {**fresh_process_env(db), **POOL_ENV}


def corral_argv(*args: str) -> list[str]:
    """The argv of one corral command run by this interpreter."""
    return [sys.executable, "-m", "corral.cli.main", *args]


@contextmanager
def running(
    db: str, *, workers: int, exec_cmd: str, folder: str | None = None
) -> Iterator[subprocess.Popen[Any]]:
    """An orchestrator on `db` with `workers` workers running `exec_cmd`, started in
    `folder` (default: the SQLite database's; a PostgreSQL store needs one); stopped after."""
    folder = folder or os.path.dirname(db)
    with open(os.path.join(folder, "orchestrator.log"), "ab") as log:
        proc = subprocess.Popen(
            corral_argv("orchestrator", "start", "--workers", str(workers), "--exec", exec_cmd),
            env=pool_env(db),
            stdout=log,
            stderr=log,
            cwd=folder,
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGQUIT)
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=20)
        for left in processes_of(db):
            with suppress(psutil.Error):
                left.kill()
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def wait_running(store: Store, workers: int, timeout_s: float = 60) -> None:
    """Until the row is running and `workers` slots have registered workers."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = store.orchestrators.get_orchestrator()
        if str(state.status) == "running" and workers == sum(
            s["state"] == "running" for s in state.slots
        ):
            return
        time.sleep(0.01)
    raise SystemExit(f"the pool of {workers} did not come up within {timeout_s} s")


def wait_all_done(store: Store, count: int, timeout_s: float = 300) -> None:
    """Until `count` tasks are done."""
    deadline = time.monotonic() + timeout_s
    flt = TaskFilter(statuses=(TaskStatus.DONE,), limit=count + 1)
    while len(store.tasks.list_tasks(flt)) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"{count} tasks not done within {timeout_s} s")
        time.sleep(0.005)


def processes_of(db: str) -> list[psutil.Process]:
    """Live processes whose environment names store `db`."""
    found = []
    for proc in psutil.process_iter():
        with suppress(psutil.Error):
            if proc.status() != psutil.STATUS_ZOMBIE and proc.environ().get("CORRAL_DB") == db:
                found.append(proc)
    return found
