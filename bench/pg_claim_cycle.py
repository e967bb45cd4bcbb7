"""Claim + complete cycles per second on PostgreSQL: corral beside the raw floor and procrastinate.

Every run drains the same number of ready jobs from a fresh database on the same server
with 1, 4 and 8 worker processes, one worker per process, and is timed from the moment
the processes are released together until the last one finds the queue empty.

- `raw`: the same SQL in a bare psycopg loop. Since schema version 10 the store's SQL for
  a claim and a completion is one named query, the call of the server-side function of
  the exchange (`exchange_on_server`; store/postgres/exchange.py), so the floor is two
  calls of it (a claim; a report), compiled exactly as the driver sends them, with the
  store's parameters, on one bare connection per process, each a transaction of its own in
  autocommit as the driver runs them (`Driver.call`: one round trip). Tuples for rows,
  no records, no pool. It is not a loop of the statements inside the function: those run
  on the server for corral and raw alike.
- `corral`: `corral.usecases.claims.claim_next` then `corral.usecases.claims.complete`
  through `open_store`.
- `procrastinate`: the peer (extra `pgbench-peer`), a no-op task deferred as many times,
  drained by `app.run_worker(concurrency=1, wait=False)` in each process.

Modes are interleaved within each repetition; figures are medians over repetitions.

    .venv/bin/pip install -e '.[pgbench-peer]'
    .venv/bin/python bench/pg_claim_cycle.py [--jobs 2000] [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from corral.model.exchange import COMPLETED_TO
from corral.model.states import ALLOWED_FROM, CLAIMING
from corral.model.tasks import NewTask
from corral.store import open_store
from corral.store.postgres.driver import compile_queries
from corral.usecases import claims, tasks
from measure import Verdicts, banner, register_worker, run_processes, table
from pg_peer import SERVER, copy_task, load_procrastinate, procrastinate_app, scratch_database

PROCESS_COUNTS = (1, 4, 8)
MODES = ("raw", "corral", "procrastinate")
LEASE_S = 1800.0  # corral's default lease


def load_corral(url: str, jobs: int, procs: int) -> list[str]:
    """`jobs` ready tasks (copies of one enqueued through corral) and `procs` idle workers."""
    with open_store(url) as store:
        workers = [register_worker(store, f"bench-{i}") for i in range(procs)]
        first = tasks.enqueue(store, NewTask(title="bench task")).id
    copy_task(url, first, jobs, analyze="")
    return workers


def drain_corral(start: Any, url: str, worker_id: str) -> tuple[float, float, int]:
    """Claim and complete through corral until the queue is empty."""
    store = open_store(url)
    cycles = 0
    start.wait()
    began = time.perf_counter()
    while (claim := claims.claim_next(store, worker_id)) is not None:
        claims.complete(store, claim.task_id, token=claim.token)
        cycles += 1
    ended = time.perf_counter()
    store.close()
    return began, ended, cycles


# The report actions whose allowed states the exchange's function takes (functions.sql).
REPORT_ACTIONS = ("complete", "fail", "defer", "release", "wait")


class RawCycle:
    """The store's SQL for one claim_next + complete on a bare connection, sent as the
    driver sends it (`Driver.call`): each call of the exchange's function a transaction of
    its own, in autocommit, one round trip (store/postgres/exchange.py)."""

    def __init__(self, url: str, worker_id: str) -> None:
        self.write, _ = compile_queries(server_clock=True)
        self.conn = psycopg.connect(url, autocommit=True, options="-c TimeZone=UTC")
        self.cur = self.conn.cursor()
        self.worker_id = worker_id

    def call(self, reports: list[dict[str, Any]], limit: int) -> list[tuple[Any, ...]]:
        """The exchange's function, as claim_next (limit 1) or complete (one report) call it."""
        params = {
            "worker_id": self.worker_id,
            "reports": Jsonb(reports),
            "limit": limit,
            "task_id": None,
            "kinds": [],
            "queues": [],
            "lease_s": LEASE_S,
            "run": None,
            "run_ids": [],
            "claiming": sorted(CLAIMING),
            "completed_to": list(COMPLETED_TO),
            "return_tasks": not limit,
            **{a: sorted(ALLOWED_FROM[a]) for a in REPORT_ACTIONS},
            "unblock": sorted(ALLOWED_FROM["unblock"]),
            "namespace": "default",  # the store handle's, as its driver binds it
        }
        return self.cur.execute(self.write["exchange_on_server"], params).fetchall()

    def claim(self) -> tuple[str, int] | None:
        """claim_next: (task id, token) of the held row, or None."""
        rows = self.call([], 1)
        # Columns by name: corral_exchange's RETURNS TABLE (functions.sql) grows.
        names = [column.name for column in self.cur.description or ()]
        for row in rows:
            if row[0] == "held":
                return row[names.index("id")], row[names.index("token")]
        return None

    def complete(self, task_id: str, token: int) -> None:
        """complete: one report under the claim, the task returned."""
        report = {"task_id": task_id, "token": token, "action": "complete"}
        self.call([report | {"actor": f"token:{token}"}], 0)


def drain_raw(start: Any, url: str, worker_id: str) -> tuple[float, float, int]:
    """The raw loop until the queue is empty."""
    raw = RawCycle(url, worker_id)
    cycles = 0
    start.wait()
    began = time.perf_counter()
    while (claimed := raw.claim()) is not None:
        raw.complete(*claimed)
        cycles += 1
    ended = time.perf_counter()
    raw.conn.close()
    return began, ended, cycles


def drain_procrastinate(start: Any, url: str, _worker: str) -> tuple[float, float, int]:
    """One procrastinate worker (concurrency 1) until the queue is empty."""
    app = procrastinate_app(url)
    with app.open():
        start.wait()
        began = time.perf_counter()
        app.run_worker(concurrency=1, wait=False, install_signal_handlers=False)
        ended = time.perf_counter()
    return began, ended, 0


DRAINS: dict[str, Callable[..., tuple[float, float, int]]] = {
    "raw": drain_raw,
    "corral": drain_corral,
    "procrastinate": drain_procrastinate,
}


def done_jobs(url: str, mode: str) -> int:
    """Jobs finished in the run's database, counted by the system that ran them."""
    sql = (
        "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
        if mode == "procrastinate"
        else "SELECT count(*) FROM tasks WHERE status = 'done'"
    )
    with psycopg.connect(url) as conn:
        row = conn.execute(sql.encode()).fetchone()
        return int(row[0]) if row else 0


def one_run(mode: str, procs: int, jobs: int) -> float:
    """Drain `jobs` jobs with `procs` processes in a fresh database; jobs per second."""
    with scratch_database() as url:
        if mode == "procrastinate":
            load_procrastinate(url, jobs)
            workers = [""] * procs
        else:
            workers = load_corral(url, jobs, procs)
        results = run_processes(DRAINS[mode], [(url, w) for w in workers], timeout_s=600)
        finished = done_jobs(url, mode)
    if finished != jobs:
        raise RuntimeError(f"{mode} x{procs}: {finished} of {jobs} jobs finished")
    began = min(r[0] for r in results)
    ended = max(r[1] for r in results)
    return float(jobs / (ended - began))


def main() -> int:
    """Run the interleaved matrix, print the table, check the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2000, help="jobs drained by every run")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the whole matrix")
    opts = parser.parse_args()
    try:
        import procrastinate  # noqa: F401  (the peer; only checked for here)

        with psycopg.connect(SERVER, connect_timeout=5) as conn:
            version = conn.execute("SHOW server_version").fetchone()
    except (ImportError, psycopg.Error) as exc:
        print(f"pg_claim_cycle: cannot run: {str(exc).splitlines()[0]}")
        print("needs procrastinate (pip install -e '.[pgbench-peer]') and a server at " + SERVER)
        return 2
    banner("PostgreSQL claim + complete cycles", __doc__.split("\n\n")[1])
    print(f"server {SERVER} (PostgreSQL {version[0] if version else '?'}); {opts.jobs} jobs/run\n")

    rates: dict[tuple[str, int], list[float]] = {}
    for rep in range(opts.reps):
        for procs in PROCESS_COUNTS:
            for mode in MODES:
                rate = one_run(mode, procs, opts.jobs)
                rates.setdefault((mode, procs), []).append(rate)
                print(f"  rep {rep + 1} {mode:13} x{procs}: {rate:7.0f} jobs/s", flush=True)
    med = {key: statistics.median(values) for key, values in rates.items()}

    print("\nthroughput (median of reps, claim+complete cycles/s)")
    rows = []
    for procs in PROCESS_COUNTS:
        raw, svc, peer = (med[(m, procs)] for m in MODES)
        rows.append(
            [
                procs,
                f"{raw:.0f}",
                f"{svc:.0f}",
                f"{peer:.0f}",
                f"{svc / raw:.2f}",
                f"{svc / peer:.2f}",
            ]
        )
    headers = ["processes", "raw", "corral", "procrastinate", "corral/raw", "corral/procr."]
    print(table(headers, rows))

    v = Verdicts("pg_claim_cycle")
    for procs in PROCESS_COUNTS:
        raw, svc, peer = (med[(m, procs)] for m in MODES)
        v.check(f"corral >= 60% of raw, x{procs}", f"{svc / raw:.0%}", svc >= 0.6 * raw)
        v.check(f"corral ahead of procrastinate, x{procs}", f"{svc / peer:.2f}x", svc > peer)
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
