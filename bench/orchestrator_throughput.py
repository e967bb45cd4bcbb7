"""Pool throughput: tasks that sleep 200 ms, with 1 worker and with 3 (target: 3 workers >= 2.8x).

For each pool size, interleaved --rounds times on a fresh store: enqueue --tasks tasks
whose command is `sleep 0.2`, start the orchestrator, and wait until all are done. The
time counted runs from the first `task.claimed` event to the last `task.completed` (the
store's clock), so the pool's start-up is left out. Throughput is tasks per second; the
ratio compares the medians.

    .venv/bin/python bench/orchestrator_throughput.py [--tasks 60] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

from corral import EventFilter, NewTask, enqueue, load_settings
from corral.store import open_store
from measure import Verdicts, banner, table, temp_dir
from pool_harness import pool_env, running, wait_all_done

TARGET_RATIO = 2.8


def one_round(workers: int, tasks: int) -> float:
    """Tasks per second of a pool of `workers` on `tasks` tasks of 200 ms."""
    with temp_dir("orch-tp") as folder:
        db = os.path.join(folder, "corral.db")
        store = open_store(db)
        settings = load_settings(pool_env(db))
        for n in range(tasks):
            enqueue(store, NewTask(title=f"sleep {n}"), settings=settings)
        with running(db, workers=workers, exec_cmd="sleep 0.2"):
            wait_all_done(store, tasks)
        events = store.events.list_events(EventFilter(limit=100_000))
        store.close()
    began = min(e.at for e in events if e.name == "task.claimed")
    ended = max(e.at for e in events if e.name == "task.completed")
    return tasks / (ended - began).total_seconds()


def main() -> int:
    """Measure, print, judge."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    banner("orchestrator throughput", f"{args.tasks} tasks of `sleep 0.2`, pools of 1 and 3")
    rates: dict[int, list[float]] = {1: [], 3: []}
    for _ in range(args.rounds):
        for workers in (1, 3):
            rates[workers].append(one_round(workers, args.tasks))
    medians = {w: statistics.median(r) for w, r in rates.items()}
    print(
        table(
            ["workers", "tasks/s (median)", "rounds"],
            [[w, f"{medians[w]:.2f}", " ".join(f"{r:.2f}" for r in rates[w])] for w in rates],
        )
    )
    ratio = medians[3] / medians[1]
    verdicts = Verdicts("orchestrator throughput")
    verdicts.check(
        f"3 workers / 1 worker >= {TARGET_RATIO}x", f"{ratio:.2f}x", ratio >= TARGET_RATIO
    )
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
