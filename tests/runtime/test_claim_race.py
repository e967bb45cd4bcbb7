"""One winner per claim (ARCHITECTURE.md 4.1), with real processes on one store of each dialect."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from tests.conftest import STORE_DIALECTS, store_url

from corral import (
    EventFilter,
    NewTask,
    NewWorker,
    TaskFilter,
    TaskStatus,
    enqueue,
    open_store,
    register,
)

CORRAL = str(Path(sys.executable).with_name("corral"))

DRAIN_QUEUE = """
from corral import NewWorker, claim_next, complete, open_store, register

with open_store(ARGS[0]) as store:
    worker_id = register(store, NewWorker(name=NAME)).worker.id
    barrier()
    claimed = []
    while (claim := claim_next(store, worker_id)) is not None:
        complete(store, claim.task_id, token=claim.token)
        claimed.append(claim.task_id)
print(json.dumps({"worker_id": worker_id, "claimed": claimed}))
"""

CLAIM_EACH = """
from corral import NewWorker, Refused, claim, open_store, register

with open_store(ARGS[0]) as store:
    worker_id = register(store, NewWorker(name=NAME, max_concurrent=1000)).worker.id
    barrier()
    won, refused = [], []
    for task_id in json.loads(ARGS[1]):
        try:
            won.append([task_id, claim(store, task_id, worker_id).token])
        except Refused as exc:
            refused.append([task_id, exc.message])
print(json.dumps({"worker_id": worker_id, "won": won, "refused": refused}))
"""


def _enqueue(db: str, count: int) -> list[str]:
    with open_store(db) as store:
        return [enqueue(store, NewTask(title=f"task {n}")).id for n in range(count)]


@pytest.fixture(params=STORE_DIALECTS)
def race_db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store of each dialect: a file, or a PostgreSQL schema of its own."""
    return store_url(request.param, request, tmp_path)


def test_four_processes_drain_500_tasks_claiming_each_exactly_once(children, race_db):
    """Four processes looping claim_next + complete on one file claim every task exactly once."""
    db = race_db
    task_ids = _enqueue(db, 500)
    for n in range(4):
        children.start(f"p{n}", DRAIN_QUEUE, db)
    children.go()
    finished = children.finish()

    assert {name: 0 for name in finished} == {n: f.code for n, f in finished.items()}
    reports = [json.loads(f.out) for f in finished.values()]
    claimed = [task_id for report in reports for task_id in report["claimed"]]
    assert sorted(task_ids) == sorted(claimed)
    with open_store(db) as store:
        tasks = store.tasks.list_tasks(TaskFilter())
        events = store.events.list_events(EventFilter(limit=100_000))
    assert {(t, "done", 1) for t in task_ids} == {(t.id, t.status, t.attempts) for t in tasks}
    claims_per_task = Counter(e.task_id for e in events if e.name == "task.claimed")
    assert dict.fromkeys(task_ids, 1) == dict(claims_per_task)
    completions = Counter(e.task_id for e in events if e.name == "task.completed")
    assert dict.fromkeys(task_ids, 1) == dict(completions)


@pytest.mark.slow
def test_eight_processes_drain_2000_tasks_claiming_each_exactly_once(children, pg_url):
    """Eight processes looping claim_next + complete claim every one of 2,000 tasks once."""
    task_ids = _enqueue(pg_url, 2000)
    for n in range(8):
        children.start(f"p{n}", DRAIN_QUEUE, pg_url)
    children.go()
    finished = children.finish(timeout_s=120)

    assert {name: (0, "") for name in finished} == {n: (f.code, f.err) for n, f in finished.items()}
    claimed = [t for f in finished.values() for t in json.loads(f.out)["claimed"]]
    assert sorted(task_ids) == sorted(claimed)
    assert 8 == sum(1 for f in finished.values() if json.loads(f.out)["claimed"])
    with open_store(pg_url) as store:
        tasks = store.tasks.list_tasks(TaskFilter(limit=10_000))
        events = store.events.list_events(EventFilter(limit=100_000))
    assert {(t, "done", 1) for t in task_ids} == {(t.id, t.status, t.attempts) for t in tasks}
    claims = Counter(e.task_id for e in events if e.name == "task.claimed")
    completions = Counter(e.task_id for e in events if e.name == "task.completed")
    assert dict.fromkeys(task_ids, 1) == dict(claims) == dict(completions)


def test_processes_racing_for_the_same_task_leave_exactly_one_winner(children, race_db):
    """Six processes claiming the same tasks by id at once: each task has exactly one winner."""
    db = race_db
    task_ids = _enqueue(db, 20)
    for n in range(6):
        children.start(f"p{n}", CLAIM_EACH, db, json.dumps(task_ids))
    children.go()
    finished = children.finish()

    assert {name: 0 for name in finished} == {n: f.code for n, f in finished.items()}
    reports = [json.loads(f.out) for f in finished.values()]
    winners = Counter(task_id for r in reports for task_id, _ in r["won"])
    assert dict.fromkeys(task_ids, 1) == dict(winners)
    losers = Counter(task_id for r in reports for task_id, _ in r["refused"])
    assert dict.fromkeys(task_ids, 5) == dict(losers)
    assert all("running" in message for r in reports for _, message in r["refused"])
    won_by = {task_id: (r["worker_id"], token) for r in reports for task_id, token in r["won"]}
    with open_store(db) as store:
        tasks = {t.id: t for t in store.tasks.list_tasks(TaskFilter())}
        events = store.events.list_events(EventFilter(limit=100_000))
    assert won_by == {t.id: (t.worker_id, t.token) for t in tasks.values()}
    assert {TaskStatus.RUNNING} == {t.status for t in tasks.values()}
    assert {1} == {t.attempts for t in tasks.values()}
    assert 20 == sum(1 for e in events if e.name == "task.claimed")


def test_cli_claims_racing_for_one_task_exit_0_once_and_1_for_the_rest(race_db):
    """`corral claim` run by six processes at once: one exits 0, the rest exit 1 with one line."""
    db = race_db
    (task_id,) = _enqueue(db, 1)
    with open_store(db) as store:
        workers = [register(store, NewWorker(name=f"w{n}")).worker.id for n in range(6)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DB"] = db
    procs = [
        subprocess.Popen(
            [CORRAL, "claim", task_id, worker, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for worker in workers
    ]
    try:
        outputs = [p.communicate(timeout=60) for p in procs]
        results = [(p.returncode, out, err) for p, (out, err) in zip(procs, outputs, strict=True)]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    assert [0, 1, 1, 1, 1, 1] == sorted(code for code, _, _ in results)
    (winner_out,) = [out for code, out, _ in results if code == 0]
    refusals = [err for code, _, err in results if code == 1]
    assert all(1 == err.count("\n") and "running" in err for err in refusals)
    with open_store(db) as store:
        task = store.tasks.get_task(task_id)
    assert (task.worker_id, task.token) == tuple(
        json.loads(winner_out)[k] for k in ("worker_id", "token")
    )
