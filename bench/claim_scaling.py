"""Claim latency with 1,000 vs 100,000 ready tasks: indexes, not scans.

Two stores, filled by measure.bulk_load (one real enqueue, then copies of the rows it
wrote, by executemany, every index in place), priorities cycling 0..9 so claim order is
not insert order. One worker each. Samples alternate between the stores; after each
timed claim the task is released (untimed), so the ready count stays exactly 1,000 or
100,000. Measured through the service layer:

- `claim_next`: corral.usecases.claims.claim_next (what `corral claim:next` does);
- `claim ID`: corral.usecases.claims.claim on a random ready task (what `corral claim ID W` does);
- `ready --limit 1`: store.tasks.ready_tasks, the read the bash loop makes before each claim
  (reported, not a target).

    .venv/bin/python bench/claim_scaling.py [--samples 300]
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from corral.store import Store
from corral.store.queries import load_queries
from corral.usecases import claims
from measure import (
    Spread,
    Verdicts,
    banner,
    bulk_load,
    ms,
    new_store,
    register_worker,
    table,
    temp_dir,
)

SIZES = (1_000, 100_000)
PRIORITIES = 10
RATIO_TARGET = 1.5


@dataclass(frozen=True, slots=True, kw_only=True)
class Loaded:
    """One store under test: its size, worker and ready task ids."""

    size: int
    path: str
    store: Store
    worker: str
    tasks: list[str]


def load(folder: str, size: int) -> Loaded:
    """A store with `size` ready tasks and one idle worker."""
    path = os.path.join(folder, f"tasks-{size}.db")
    store = new_store(path)
    worker = register_worker(store, f"scaling-{size}")
    t0 = time.perf_counter()
    tasks = bulk_load(path, size, priorities=PRIORITIES)
    print(f"  loaded {size:>7,} tasks (+ their events) in {time.perf_counter() - t0:.2f} s")
    return Loaded(size=size, path=path, store=store, worker=worker, tasks=tasks)


def claim_next(s: Loaded, rng: random.Random) -> float:
    """Time one claim_next, then release the task untimed."""
    t0 = time.perf_counter()
    claim = claims.claim_next(s.store, s.worker)
    elapsed = time.perf_counter() - t0
    assert claim is not None
    claims.release(s.store, claim.task_id, worker_id=s.worker, token=claim.token)
    return elapsed


def claim_id(s: Loaded, rng: random.Random) -> float:
    """Time one claim of a random ready task by id, then release it untimed."""
    task_id = rng.choice(s.tasks)
    t0 = time.perf_counter()
    claim = claims.claim(s.store, task_id, s.worker)
    elapsed = time.perf_counter() - t0
    claims.release(s.store, claim.task_id, worker_id=s.worker, token=claim.token)
    return elapsed


def ready_one(s: Loaded, rng: random.Random) -> float:
    """Time one `ready --limit 1` read."""
    t0 = time.perf_counter()
    found = s.store.tasks.ready_tasks(queue=None, kinds=(), limit=1)
    elapsed = time.perf_counter() - t0
    assert found
    return elapsed


OPS: dict[str, Callable[[Loaded, random.Random], float]] = {
    "claim_next": claim_next,
    "claim ID": claim_id,
    "ready --limit 1": ready_one,
}


def query_plan(path: str, name: str) -> list[str]:
    """EXPLAIN QUERY PLAN of named query `name` with null filters."""
    params: dict[str, Any] = {"worker_id": "w", "worker_name": "w", "kinds": None, "queues": None}
    params["queue"] = None
    params |= {"now": time.time(), "limit": 1, "task_id": "t", "allowed": '["ready"]'}
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("EXPLAIN QUERY PLAN " + load_queries("sqlite")[name], params)
        return [r[3] for r in rows]
    finally:
        conn.close()


def main() -> int:
    """Load both stores, sample every operation alternately, compare."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=300, help="samples per op and size")
    opts = parser.parse_args()
    banner("claim latency vs queue depth", __doc__.split("\n\n")[1])
    rng = random.Random(2026)
    v = Verdicts("claim_scaling")
    with temp_dir("scaling") as folder:
        stores = [load(folder, size) for size in SIZES]
        times: dict[tuple[str, int], list[float]] = {}
        for op_name, op in OPS.items():
            for _ in range(opts.samples):
                for s in stores:
                    times.setdefault((op_name, s.size), []).append(op(s, rng))
        rows = []
        for op_name in OPS:
            small, large = (Spread.of(times[(op_name, size)]) for size in SIZES)
            ratio = large.p50_s / small.p50_s
            cells = [ms(small.p50_s), ms(small.p95_s), ms(large.p50_s), ms(large.p95_s)]
            rows.append([op_name, *cells, f"{ratio:.2f}"])
            if op_name != "ready --limit 1":
                v.check(
                    f"{op_name}: median 100k / 1k < {RATIO_TARGET}", f"{ratio:.2f}", ratio < 1.5
                )
        print(f"\nlatency in ms, {opts.samples} samples per cell, stores alternating")
        print(table(["operation", "1k p50", "1k p95", "100k p50", "100k p95", "ratio p50"], rows))
        for name in ("claim_tasks", "ready_tasks"):
            print(f"\nEXPLAIN QUERY PLAN {name} (100k store):")
            print("\n".join(f"  {line}" for line in query_plan(stores[1].path, name)))
        for s in stores:
            s.store.close()
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
