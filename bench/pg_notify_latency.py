"""Enqueue to pick-up latency on PostgreSQL: an idle runner woken by LISTEN/NOTIFY.

A real runner (`.venv/bin/corral worker start --name bench-notify --exec true`) waits on
a fresh database on the server. --tasks times: after a pause drawn from 0.2 to 2.5 s
(so the runner is anywhere in its idle backoff, whose waits grow to 2 s), the script
enqueues one task through corral and waits until it is done. The latency is the claim's
`claimed_at` minus the task's `created_at`: both are the server's now() at the start of
their transactions, so no clock of this machine is involved, and the enqueue's own commit
is counted. Polling alone would give a median near half the current backoff.

    .venv/bin/python bench/pg_notify_latency.py [--tasks 40]
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time

import psycopg

from corral.model.tasks import NewTask
from corral.store import Store, open_store
from corral.usecases.tasks import enqueue
from measure import (
    VENV_BIN,
    Spread,
    Verdicts,
    banner,
    fresh_process_env,
    ms,
    spawned,
    stop_gently,
    table,
    temp_dir,
    wait_for_worker,
)
from pg_peer import scratch_database

CORRAL = os.path.join(VENV_BIN, "corral")
MEDIAN_TARGET_S = 0.050
P95_TARGET_S = 0.200
DONE_TIMEOUT_S = 30.0


def pick_up_s(url: str, task_id: str) -> float:
    """Seconds from the task's creation to its claim, both on the server's clock."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            """SELECT extract(epoch FROM c.claimed_at - t.created_at)
               FROM tasks t JOIN claims c ON c.task_id = t.id WHERE t.id = %s""",
            (task_id,),
        ).fetchone()
    assert row is not None
    return float(row[0])


def wait_done(store: Store, task_id: str) -> None:
    """Until the task is done; RuntimeError after DONE_TIMEOUT_S."""
    deadline = time.monotonic() + DONE_TIMEOUT_S
    while str(store.tasks.get_task(task_id).status) != "done":
        if time.monotonic() > deadline:
            raise RuntimeError(f"task {task_id} was not done within {DONE_TIMEOUT_S:g} s")
        time.sleep(0.01)


def measure(url: str, folder: str, tasks: int, rng: random.Random) -> list[float]:
    """Latencies of `tasks` enqueues, each after a random idle pause."""
    log = os.path.join(folder, "runner.log")
    argv = [CORRAL, "worker", "start", "--name", "bench-notify", "--exec", "true"]
    env = fresh_process_env(url)
    latencies = []
    with (
        open(log, "w") as err,
        spawned(argv, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=err) as proc,
        open_store(url) as store,
    ):

        def alive() -> bool:
            return proc.poll() is None

        wait_for_worker(url, "bench-notify", ("idle",), timeout_s=30.0, alive=alive)
        for n in range(tasks):
            time.sleep(rng.uniform(0.2, 2.5))
            task = enqueue(store, NewTask(title=f"notify {n}"))
            wait_done(store, task.id)
            latencies.append(pick_up_s(url, task.id))
        if stop_gently(proc) != 0:
            raise RuntimeError(f"the runner did not exit 0; see {log}")
    return latencies


def main() -> int:
    """Measure, print the spread, check the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=40, help="enqueues to time")
    opts = parser.parse_args()
    banner("PostgreSQL: enqueue to pick-up with NOTIFY", __doc__.split("\n\n")[1])
    v = Verdicts("pg_notify_latency")
    with temp_dir("notify") as folder, scratch_database() as url:
        latencies = measure(url, folder, opts.tasks, random.Random(5))
    spread = Spread.of(latencies)
    print(f"enqueue to claim, one idle runner, {spread.n} tasks (ms, server clock)")
    cells = [ms(spread.p50_s), ms(spread.p95_s), ms(spread.max_s), ms(min(latencies))]
    print(table(["median", "p95", "max", "min"], [cells]))
    v.check("median < 50 ms", f"{ms(spread.p50_s)} ms", spread.p50_s < MEDIAN_TARGET_S)
    v.check("p95 < 200 ms", f"{ms(spread.p95_s)} ms", spread.p95_s < P95_TARGET_S)
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
