"""Retention beside a working queue: `corral prune` deleting 100,000 finished tasks (each
with its claim, run and events) while this process claims and completes other tasks.

Target (issue 20): the prune deletes in bounded batches and no claim waits more than
50 ms for it. Printed: claim latency (p50, p99, max) before the prune and while it runs
(the floor is the same loop without a prune, in the same run), the prune's duration and
rate, and what it deleted. The floor runs after the prune, for as long as the prune took
(or `--floor-s`): a claim's longest wait over some tens of seconds on a shared machine
includes the scheduler's, which a short floor would not show. SQLite: the store where one
writer at a time makes a long delete most visible to claims.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sqlite3
import subprocess
import sys
import threading
import time

import corral
from corral import NewRun, NewTask, NewWorker
from corral.foundation.ids import RUN_PREFIX, TASK_PREFIX, new_id
from measure import (
    ROOT,
    Spread,
    Verdicts,
    banner,
    fresh_process_env,
    ms,
    new_store,
    table,
    temp_dir,
)

TARGET_MAX_S = 0.050
DAY_S = 86_400.0


def load_finished(path: str, count: int) -> None:
    """`count` done tasks two days old, each with its claim, run and events: copies, by
    executemany, of the rows one real task left going through enqueue, claim, run, done."""
    with new_store(path) as store:
        worker = corral.register(store, NewWorker(name="old")).worker.id
        task = corral.enqueue(store, NewTask(title="old task")).id
        claim = corral.claim(store, task, worker)
        store.runs.start_run(
            NewRun(task_id=task, worker_id=worker, token=claim.token, attempt=1, prompt="p",
                   command=("agent",), cwd="/", transcript_path=None, stderr_path=None)
        )  # fmt: skip
        corral.complete(store, task, token=claim.token)
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("BEGIN IMMEDIATE")
        rows = {
            name: dict(conn.execute(f"SELECT * FROM {name} WHERE {key} = ?", (task,)).fetchone())
            for name, key in (("tasks", "id"), ("claims", "task_id"), ("runs", "task_id"))
        }
        events = [dict(r) for r in conn.execute("SELECT * FROM events WHERE task_id = ?", (task,))]
        for key in (("tasks", "seq"), ("claims", "token")):
            del rows[key[0]][key[1]]
        old = time.time() - 2 * DAY_S
        rows["tasks"].update(created_at=old, updated_at=old, run_after=old)
        rows["claims"].update(claimed_at=old, lease_expires_at=old, ended_at=old)
        rows["runs"].update(started_at=old)
        for event in events:
            del event["id"]
            event["at"] = old
        ids = [new_id(TASK_PREFIX) for _ in range(count)]
        for table_name in ("tasks", "claims", "runs"):
            row = rows[table_name]
            copies = (_copy(table_name, row, t) for t in ids)
            conn.executemany(_insert(table_name, row), copies)
        conn.executemany(
            _insert("events", events[0]),
            ({**e, "task_id": t} for t, e in itertools.product(ids, events)),
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


def _copy(table_name: str, row: dict[str, object], task_id: str) -> dict[str, object]:
    copy = {**row, "task_id": task_id} if table_name != "tasks" else {**row, "id": task_id}
    if table_name == "runs":
        copy["id"] = new_id(RUN_PREFIX)
    return copy


def _insert(table_name: str, row: dict[str, object]) -> str:
    return f"INSERT INTO {table_name} ({', '.join(row)}) VALUES ({', '.join(':' + c for c in row)})"


def claim_loop(path: str, stop: threading.Event, latencies: list[float]) -> None:
    """Enqueue, claim and complete one task at a time until `stop`; each claim's time."""
    with corral.open_store(path) as store:
        worker = corral.register(store, NewWorker(name="live")).worker.id
        corral.heartbeat(store, worker)
        while not stop.is_set():
            task = corral.enqueue(store, NewTask(title="live")).id
            began = time.perf_counter()
            claim = corral.claim(store, task, worker)
            latencies.append(time.perf_counter() - began)
            corral.complete(store, task, token=claim.token)


def measure(path: str, seconds: float, prune: bool) -> tuple[list[float], float | None, str]:
    """Claim latencies over `seconds` of the loop, with a prune running beside it or not."""
    stop, latencies = threading.Event(), list[float]()
    loop = threading.Thread(target=claim_loop, args=(path, stop, latencies))
    loop.start()
    took, printed = None, ""
    try:
        if prune:
            began = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "corral.cli.main", "prune", "--finished-older-than", "1d",
                 "--workers-offline-older-than", "0", "--json"],
                env=fresh_process_env(path), capture_output=True, text=True, check=True, cwd=ROOT,
            )  # fmt: skip
            took, printed = time.perf_counter() - began, done.stdout.strip()
        else:
            time.sleep(seconds)
    finally:
        stop.set()
        loop.join()
    return latencies, took, printed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--floor-s", type=float, default=None, help="default: the prune's time")
    args = parser.parse_args()
    banner("Retention beside claims", f"{args.tasks:,} finished tasks pruned while claiming")
    with temp_dir("corral-retention-") as folder:
        path = os.path.join(folder, "corral.db")
        began = time.perf_counter()
        load_finished(path, args.tasks)
        print(f"loaded in {time.perf_counter() - began:.1f} s")
        during, took, printed = measure(path, 0, prune=True)
        assert took is not None
        floor, _, _ = measure(path, args.floor_s or took, prune=False)
    before, meanwhile = Spread.of(floor), Spread.of(during)
    print(table(
        ["phase", "claims", "p50", "p99", "max"],
        [["no prune (floor)", len(floor), ms(before.p50_s), ms(before.p99_s), ms(before.max_s)],
         ["while pruning", len(during), ms(meanwhile.p50_s), ms(meanwhile.p99_s),
          ms(meanwhile.max_s)]],
    ))  # fmt: skip
    print(f"prune: {took:.1f} s, {args.tasks / took:,.0f} tasks/s; printed {printed}")
    for phase, spans in (("while pruning", during), ("in the floor", floor)):
        slow = sum(1 for s in spans if s >= TARGET_MAX_S)
        print(f"claims of {ms(TARGET_MAX_S)} ms or more {phase}: {slow} of {len(spans)}")
    verdicts = Verdicts("retention beside claims")
    verdicts.check(
        f"longest claim while pruning < {ms(TARGET_MAX_S)} ms", f"{ms(meanwhile.max_s)} ms",
        meanwhile.max_s < TARGET_MAX_S,
    )  # fmt: skip
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
