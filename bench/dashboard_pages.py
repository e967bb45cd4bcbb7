"""Request time of the dashboard's pages on a big store, against the same pages on a small
one (issue 18: p95 under 100 ms with 100,000 tasks and 1,000,000 events; the ratio to
1,000 tasks under 2).

For each size, a SQLite store gets --tasks ready tasks (bench/measure.py's bulk_load: the
rows `enqueue` writes, copied) and EVENTS_PER_TASK events each (the task.created event,
copied), then `corral serve` starts on it and each page is loaded --samples times over
HTTP on loopback (urllib; the loopback is open: no token exists). The time is the
client's, from request to the last byte: the server's time plus a loopback round trip.
The small store is the floor, measured in the same run.

    .venv/bin/python bench/dashboard_pages.py [--tasks 100000] [--samples 50]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request

import measure

CORRAL = os.path.join(measure.VENV_BIN, "corral")
FLOOR_TASKS = 1000
EVENTS_PER_TASK = 10
P95_S = 0.100
RATIO = 2.0


def _pages(task_id: str) -> dict[str, str]:
    return {
        "overview": "/",
        "tasks": "/tasks",
        "tasks, by priority, ready": "/tasks?status=ready&sort=priority",
        "tasks, a later page": "/tasks?sort=oldest&after=0.50000",
        "tasks, text search": "/tasks?q=no+such+words",
        "task": f"/tasks/{task_id}",
        "events": "/events",
    }


def _seed(path: str, count: int) -> str:
    """`count` tasks and EVENTS_PER_TASK events each; the id of a task in the middle."""
    ids = measure.bulk_load(path, count, priorities=5)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(events)") if r[1] != "id"]
        listed = ", ".join(columns)
        conn.execute("BEGIN IMMEDIATE")
        (top,) = conn.execute("SELECT max(id) FROM events").fetchone()
        for _ in range(EVENTS_PER_TASK - 1):  # copies of the first events only, not of copies
            conn.execute(
                f"INSERT INTO events ({listed}) SELECT {listed} FROM events "
                "WHERE name = 'task.created' AND id <= ?",
                (top,),
            )
        conn.execute("COMMIT")
    finally:
        conn.close()
    return ids[len(ids) // 2]


def _times(url: str, samples: int) -> measure.Spread:
    found = []
    for _ in range(samples):
        start = time.perf_counter()
        with urllib.request.urlopen(url, timeout=30) as answer:  # noqa: S310 - http://
            answer.read()
        found.append(time.perf_counter() - start)
    return measure.Spread.of(found)


def _measure(folder: str, count: int, samples: int) -> dict[str, measure.Spread]:
    path = os.path.join(folder, f"corral-{count}.db")
    task_id = _seed(path, count)
    port = 8600 + count % 97
    argv = [CORRAL, "serve", "--port", str(port)]
    env = measure.fresh_process_env(path)
    with measure.spawned(
        argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    ) as proc:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(base + "/healthz", timeout=1).read()  # noqa: S310
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        found = {name: _times(base + page, samples) for name, page in _pages(task_id).items()}
        measure.stop_gently(proc)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=50)
    args = parser.parse_args()
    measure.banner(
        "dashboard pages", f"{args.tasks} tasks vs {FLOOR_TASKS}, {args.samples} loads each"
    )
    with measure.temp_dir("dashboard") as folder:
        floor = _measure(folder, FLOOR_TASKS, args.samples)
        big = _measure(folder, args.tasks, args.samples)
    verdicts = measure.Verdicts("dashboard pages")
    rows = []
    for name, spread in big.items():
        ratio = spread.p95_s / floor[name].p95_s
        rows.append(
            [
                name,
                measure.ms(floor[name].p50_s),
                measure.ms(floor[name].p95_s),
                measure.ms(spread.p50_s),
                measure.ms(spread.p95_s),
                f"{ratio:.2f}",
            ]
        )
        verdicts.check(
            f"{name}: p95 < {measure.ms(P95_S)}", measure.ms(spread.p95_s), spread.p95_s < P95_S
        )
        verdicts.check(f"{name}: ratio < {RATIO}", f"{ratio:.2f}", ratio < RATIO)
    print(
        measure.table(
            [
                "page",
                f"p50 {FLOOR_TASKS}",
                f"p95 {FLOOR_TASKS}",
                f"p50 {args.tasks}",
                f"p95 {args.tasks}",
                "ratio p95",
            ],
            rows,
        )
    )
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
