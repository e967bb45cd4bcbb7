"""Store outages under a running pool: an orchestrator, 4 workers and a stream of tasks.

PostgreSQL outages run on a private server (conftest.py) stopped with `pg_ctl stop -m
immediate` and started again; the SQLite outage is a real process holding the database
under `BEGIN EXCLUSIVE`. After each: nothing lost, nothing completed twice, every corral
process that ran before the outage still runs, and the orchestrator logged the outage
once at its start and once at its end. The outage's length is the subject here, so the
test waits it out; everything else is polled.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil
import pytest

from corral import EventFilter, NewTask, TaskFilter, TaskStatus, enqueue, open_store
from corral.foundation.errors import StoreError

from .conftest import Pool

WORKERS = 4
OUTAGE_ENV = {
    # Tasks still run when the store goes and through the outage's first second: their
    # processes are what the orchestrator finds when it cleans up after finished runs.
    "AGENT_SLEEP_S": "1",
    # A crash or a lost lease during an outage retries; it never fails a task for good.
    "CORRAL_MAX_ATTEMPTS": "100",
    "CORRAL_MAX_CRASHES": "100",
}
UNREACHABLE = re.compile(r"store\.unreachable ")
REACHABLE = re.compile(r"store\.reachable outage_s=([\d.]+)")

# A process holding the SQLite database's write lock until it is told to let go.
HOLD_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
sys.stdin.readline()
conn.execute("ROLLBACK")
"""


class Stream:
    """A thread enqueuing a task every 0.25 s (the pool's pace) on a store of its own,
    through the outage."""

    def __init__(self, db: str) -> None:
        self._db = db
        self.added: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        with open_store(self._db) as store:
            while not self._stop.wait(0.25):
                try:
                    self.added.append(enqueue(store, NewTask(title="streamed")).id)
                except StoreError:
                    continue  # the outage: the next one tries again

    def stop(self) -> None:
        """Stop adding tasks."""
        self._stop.set()
        self._thread.join(30)


def _live(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _start(pool: Any) -> tuple[subprocess.Popen[bytes], dict[str, int]]:
    """The orchestrator with 4 workers, running; its workers' pids by slot."""
    pool.env.update(OUTAGE_ENV)
    orchestrator = pool.start(workers=WORKERS)
    pool.wait_running(WORKERS)
    workers = {
        w.name: w.pid for w in pool.store.workers.list_workers() if w.name.startswith("slot-")
    }
    assert WORKERS == len(workers)
    return orchestrator, workers


def _busy(pool: Any, stream: Stream) -> None:
    """Until the stream's tasks are flowing: some done, some running."""

    def flowing() -> bool:
        tasks = pool.store.tasks.list_tasks(TaskFilter(limit=10_000))
        statuses = Counter(t.status for t in tasks)
        return statuses[TaskStatus.DONE] >= 4 and statuses[TaskStatus.RUNNING] >= 1

    pool.wait(flowing, 30)


def _after(pool: Any, stream: Stream, orchestrator: Any, workers: dict[str, int]) -> None:
    """More tasks after the outage, then every one done exactly once, nobody gone."""
    added = len(stream.added)
    pool.wait(lambda: len(stream.added) >= added + 12, 30)
    stream.stop()
    pool.wait(lambda: _unfinished(pool) == 0, 60)

    log = pool.log()
    assert orchestrator.poll() is None, log
    assert {name: True for name in workers} == {
        name: _live(pid) for name, pid in workers.items()
    }, log
    tasks = pool.store.tasks.list_tasks(TaskFilter(limit=10_000))
    assert set(stream.added) <= {t.id for t in tasks}
    assert {TaskStatus.DONE} == {t.status for t in tasks}
    events = pool.store.events.list_events(EventFilter(names=("task.completed",), limit=100_000))
    assert {t.id: 1 for t in tasks} == dict(Counter(e.task_id for e in events))


def _unfinished(pool: Any) -> int:
    flt = TaskFilter(statuses=(TaskStatus.READY, TaskStatus.RUNNING), limit=10_000)
    return len(pool.store.tasks.list_tasks(flt))


def _logged_once(pool: Any, outage_s: float) -> None:
    """The orchestrator logged the outage once as it began, once as it ended, with its length."""
    log = pool.log()
    assert 1 == len(UNREACHABLE.findall(log)), log
    (lasted,) = REACHABLE.findall(log)
    assert outage_s - 1 <= float(lasted) <= outage_s + 3, log


@pytest.mark.slow
@pytest.mark.parametrize("outage_s", [2, 10, 60])
def test_a_postgresql_outage_loses_repeats_and_ends_nothing(
    private_server: Any, tmp_path: Path, outage_s: int
):
    """Server stopped (immediate) for 2, 10, 60 s under a busy pool: every task done once,
    the orchestrator and its 4 workers still running, the outage logged once each way."""
    pool = Pool(tmp_path, db=private_server.url)
    try:
        orchestrator, workers = _start(pool)
        stream = Stream(pool.db)
        _busy(pool, stream)
        stopped_at = time.monotonic()
        private_server.ctl("-m", "immediate", "stop")
        pool.wait(lambda: UNREACHABLE.search(pool.log()) is not None, 10)
        time.sleep(max(0.0, stopped_at + outage_s - time.monotonic()))  # the subject
        private_server.ctl("start")
        _after(pool, stream, orchestrator, workers)
        _logged_once(pool, outage_s)
    finally:
        pool.close()


@pytest.mark.slow
def test_a_sqlite_file_locked_for_30_s_loses_repeats_and_ends_nothing(pool: Any):
    """Another process holds the database under BEGIN EXCLUSIVE for 30 s under a busy pool:
    every task done once, the orchestrator and its 4 workers still running."""
    orchestrator, workers = _start(pool)
    stream = Stream(pool.db)
    _busy(pool, stream)
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, pool.db], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    ) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        try:
            assert b"locked\n" == holder.stdout.readline()
            time.sleep(30)  # the outage's length is the subject
            holder.stdin.write(b"\n")
            holder.stdin.flush()
            assert 0 == holder.wait(10)
        finally:
            holder.kill()
    _after(pool, stream, orchestrator, workers)
    _logged_once(pool, 30)
