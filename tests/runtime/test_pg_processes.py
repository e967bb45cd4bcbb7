"""The PostgreSQL store under real processes: claim, limit and migration races, a restart.

The restart test runs a private throwaway server (conftest.py: initdb into a temporary
folder, on a port of its own), never the shared one: other people's tests use that.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import psycopg
import pytest

from corral import (
    EventFilter,
    NewTask,
    TaskFilter,
    TaskStatus,
    enqueue,
    open_store,
    set_queue_limits,
)
from corral.store.queries import migration_files

from .conftest import wait_until

CORRAL = str(Path(sys.executable).with_name("corral"))
LATEST = migration_files("postgresql")[-1][0]

OPEN_STORE = """
from corral import open_store

barrier()
with open_store(ARGS[0]) as store:
    print(json.dumps(store.schema_version()))
"""


def _enqueue(url: str, count: int) -> list[str]:
    with open_store(url) as store:
        return [enqueue(store, NewTask(title=f"task {n}")).id for n in range(count)]


def test_processes_opening_a_new_schema_at_once_migrate_it_exactly_once(children, pg_url):
    """Six processes opening one brand-new schema at the same instant all succeed, once."""
    for n in range(6):
        children.start(f"p{n}", OPEN_STORE, pg_url)
    children.go()
    finished = children.finish()

    assert {n: (0, "") for n in finished} == {n: (f.code, f.err) for n, f in finished.items()}
    assert {n: [LATEST, LATEST] for n in finished} == {
        n: json.loads(f.out) for n, f in finished.items()
    }
    with psycopg.connect(pg_url) as conn:
        versions = conn.execute("SELECT version FROM corral_migrations").fetchall()
    assert [(v,) for v in range(1, LATEST + 1)] == sorted(versions)


CLAIM_ONCE = """
from corral import LimitReached, NewWorker, claim_next, open_store, register

with open_store(ARGS[0]) as store:
    worker_id = register(store, NewWorker(name=NAME)).worker.id
    barrier()
    claim = claim_next(store, worker_id)
print(json.dumps(None if claim is None else claim.task_id))
"""

ENQUEUE_TWO = """
from corral import LimitReached, NewTask, enqueue, open_store

with open_store(ARGS[0]) as store:
    barrier()
    results = []
    for n in range(2):
        try:
            results.append(enqueue(store, NewTask(title=NAME, queue="narrow")).id)
        except LimitReached as exc:
            results.append(exc.message)
print(json.dumps(results))
"""


def test_claimers_racing_on_a_queue_at_max_running_never_exceed_it(children, pg_url):
    """Eight processes claiming at once from a queue limited to 3 running: 3 claims, no more."""
    with open_store(pg_url) as store:
        for n in range(8):
            enqueue(store, NewTask(title=f"t{n}", queue="narrow"))
        set_queue_limits(store, "narrow", {"max_running": 3})
    for n in range(8):
        children.start(f"p{n}", CLAIM_ONCE, pg_url)
    children.go()
    finished = children.finish()

    assert {n: (0, "") for n in finished} == {n: (f.code, f.err) for n, f in finished.items()}
    claimed = [json.loads(f.out) for f in finished.values()]
    assert 3 == len([c for c in claimed if c is not None])
    assert 3 == _count(pg_url, TaskStatus.RUNNING)


def test_enqueuers_racing_on_a_queue_at_max_ready_never_exceed_it(children, pg_url):
    """Eight processes enqueueing two tasks each into a queue of max_ready 5: 5 accepted."""
    with open_store(pg_url) as store:
        set_queue_limits(store, "narrow", {"max_ready": 5})
    for n in range(8):
        children.start(f"p{n}", ENQUEUE_TWO, pg_url)
    children.go()
    finished = children.finish()

    assert {n: (0, "") for n in finished} == {n: (f.code, f.err) for n, f in finished.items()}
    results = [r for f in finished.values() for r in json.loads(f.out)]
    accepted = [r for r in results if r.startswith("t-")]
    assert 5 == len(accepted)
    assert all("is full" in r for r in results if r not in accepted)
    assert 5 == _count(pg_url, TaskStatus.READY)


# -- a private server, restarted under four runners ----------------------------------


def _runner(folder: Path, url: str, name: str) -> subprocess.Popen[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DB"] = url
    with open(folder / f"{name}.log", "wb") as log:
        return subprocess.Popen(
            [CORRAL, "worker", "start", "--name", name, "--exec", "sleep 0.2", "--lease", "5m"],
            env=env,
            cwd=folder,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _logs(folder: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in folder.glob("w*.log"))


def _saw_the_outage(folder: Path) -> bool:
    logs = _logs(folder)
    return any(event in logs for event in ("claim.failed", "store.retry", "heartbeat.failed"))


def _count(url: str, status: TaskStatus) -> int:
    with open_store(url) as store:
        return len(store.tasks.list_tasks(TaskFilter(statuses=(status,), limit=10_000)))


@pytest.mark.slow
def test_a_server_restart_under_four_runners_loses_and_repeats_nothing(private_server, tmp_path):
    """Four runners working through 60 tasks while the server restarts: every task is done
    exactly once, and the tasks running at the restart finish under their first claim."""
    url = private_server.url
    task_ids = _enqueue(url, 60)
    runners = [_runner(tmp_path, url, f"w{n}") for n in range(4)]
    try:
        wait_until(lambda: _count(url, TaskStatus.DONE) >= 8, timeout_s=60)
        with open_store(url) as store:
            in_flight = {
                t.id for t in store.tasks.list_tasks(TaskFilter(statuses=(TaskStatus.RUNNING,)))
            }
        private_server.ctl("-m", "fast", "stop")
        wait_until(lambda: _saw_the_outage(tmp_path), timeout_s=30, interval_s=0.05)
        private_server.ctl("start")
        wait_until(lambda: _count(url, TaskStatus.DONE) == 60, timeout_s=90, interval_s=0.1)
    finally:
        for proc in runners:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        codes = [proc.wait(timeout=60) for proc in runners]

    assert [0, 0, 0, 0] == codes, _logs(tmp_path)
    assert in_flight, "no task was running when the server stopped"
    with open_store(url) as store:
        tasks = store.tasks.list_tasks(TaskFilter(limit=1000))
        events = store.events.list_events(EventFilter(limit=100_000))
        runs = store.runs.list_runs(limit=1000)
    assert {(t, "done", 1) for t in task_ids} == {(t.id, t.status, t.attempts) for t in tasks}
    claims = Counter(e.task_id for e in events if e.name == "task.claimed")
    completions = Counter(e.task_id for e in events if e.name == "task.completed")
    assert dict.fromkeys(task_ids, 1) == dict(claims) == dict(completions)
    assert sorted(task_ids) == sorted(r.task_id for r in runs)
    assert {"done"} == {r.outcome for r in runs}
