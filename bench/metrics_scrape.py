"""The cost of a `GET /metrics` scrape of `corral serve` on a store with --runs runs.

For each store, the script runs one task through corral (enqueue, claim, a run started
and finished, complete), then copies its rows --runs times by SQL (tasks, claims, runs and
the five events each writes: created, claimed, run.started, completed or, one in twenty,
failed, run.finished), with waits of 0 to 10 min and runs of 0 to 2 h, and one
reconciler repair per thousand. Then it starts `corral serve` on the store and times
scrapes over HTTP (urllib, a viewer token):

- first: the first scrape of a server just started, which sums the whole event log once
  (the server is restarted for each sample);
- idle: a later scrape, nothing written since the last;
- busy: a later scrape after 10 tasks were added, claimed and completed since the last;
- floor: `GET /healthz` (one read of the store's clock), the same framework and server.

And, in the script's own process, what a scrape reads: the tallies of the whole log, of
what followed the cursor, and the gauges (tasks by queue, kind and status: a scan of
every task, each scrape).

    .venv/bin/python bench/metrics_scrape.py [--runs 100000] [--samples 40]
                                             [--stores sqlite postgresql]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
from prometheus_client.parser import text_string_to_metric_families

import corral
from corral import NewRun, NewTask, RunOutcome, open_store
from measure import (
    VENV_BIN,
    Spread,
    Verdicts,
    banner,
    free_port,
    fresh_process_env,
    ms,
    register_worker,
    spawned,
    stop_gently,
    store_url,
    table,
    temp_dir,
)

CORRAL = os.path.join(VENV_BIN, "corral")
FIRST_SAMPLES = 3
BUSY_TASKS = 10
# Targets of this script (issue 17 asks that a scrape stay cheap on a big store): what the
# counters and histograms add to a later scrape (the log read on from the cursor), and the
# first scrape of a server, which sums the whole log once. The gauges' scan of every task
# is measured beside them, without a target of its own here (docs/benchmarks.md).
TALLIES_LATER_S = 0.005
FIRST_S = 10.0  # Prometheus's default scrape_timeout

# Copies of the template task t (tasks, claims, runs, events) for n = 2..:count, task n
# created n seconds after :base, claimed (n % 600) s after that, its run lasting
# (7n % 7200) s; one in twenty failed. Each dialect's text, by table.
SQLITE_COPY = {
    "tasks": """
WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < :count)
INSERT INTO tasks (id, title, queue, kind, status, attempts, max_attempts, retry_base_s,
                   run_after, created_at, updated_at, finished_at)
SELECT 't-b' || i, title, queue, kind, CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'done' END,
       1, max_attempts, retry_base_s, :base + i, :base + i, :base + i,
       :base + i + i % 600 + (7 * i) % 7200
FROM tasks, n WHERE tasks.id = :first""",
    "claims": """
WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < :count)
INSERT INTO claims (token, task_id, worker_id, status, lease_s, claimed_at, lease_expires_at,
                    ready_at, ended_at)
SELECT :tokens + i, 't-b' || i, :worker, 'completed', 60, :base + i + i % 600,
       :base + i + i % 600 + 60, :base + i, :base + i + i % 600 + (7 * i) % 7200
FROM n""",
    "runs": """
WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < :count)
INSERT INTO runs (id, task_id, worker_id, token, attempt, started_at, finished_at, exit_code,
                  outcome, command, cwd)
SELECT 'r-b' || i, 't-b' || i, :worker, :tokens + i, 1, :base + i + i % 600,
       :base + i + i % 600 + (7 * i) % 7200, CASE WHEN i % 20 = 0 THEN 1 ELSE 0 END,
       CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'done' END, '["true"]', '/bench'
FROM n""",
    "events": """
WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < :count)
INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor, data)
SELECT at, name, task_id, worker_id, token, from_status, to_status, actor, data
FROM (SELECT i, 0 AS step, :base + i AS at, 'task.created' AS name, 't-b' || i AS task_id,
             NULL AS worker_id, NULL AS token, NULL AS from_status, 'ready' AS to_status,
             'operator' AS actor, NULL AS data FROM n
      UNION ALL
      SELECT i, 1, :base + i + i % 600, 'task.claimed', 't-b' || i, :worker, :tokens + i,
             'ready', 'running', :worker, NULL FROM n
      UNION ALL
      SELECT i, 2, :base + i + i % 600, 'run.started', 't-b' || i, :worker, :tokens + i,
             NULL, NULL, :worker, json_object('run_id', 'r-b' || i, 'attempt', 1) FROM n
      UNION ALL
      SELECT i, 3, :base + i + i % 600 + (7 * i) % 7200,
             CASE WHEN i % 20 = 0 THEN 'task.failed' ELSE 'task.completed' END, 't-b' || i,
             :worker, :tokens + i, 'running',
             CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'done' END, :worker, NULL FROM n
      UNION ALL
      SELECT i, 4, :base + i + i % 600 + (7 * i) % 7200, 'run.finished', 't-b' || i,
             :worker, :tokens + i, NULL, NULL, :worker,
             json_object('run_id', 'r-b' || i, 'outcome',
                         CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'done' END) FROM n
      UNION ALL
      SELECT i, 5, :base + i, 'worker.stale', NULL, :worker, NULL, 'idle', 'stale',
             'reconciler', NULL FROM n WHERE i % 1000 = 0)
ORDER BY i, step""",
}

PG_SERIES = "generate_series(2, %(count)s) AS n(i)"
PG_AT = "%(base)s::timestamptz + ({}) * interval '1 second'"
PG_COPY = {
    "tasks": f"""
INSERT INTO tasks (id, title, queue, kind, status, attempts, max_attempts, retry_base_s,
                   run_after, created_at, updated_at, finished_at)
SELECT 't-b' || i, title, queue, kind, CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'done' END,
       1, max_attempts, retry_base_s, {PG_AT.format("i")}, {PG_AT.format("i")},
       {PG_AT.format("i")}, {PG_AT.format("i + i % 600 + (7 * i) % 7200")}
FROM tasks, {PG_SERIES} WHERE tasks.id = %(first)s""",
    "claims": f"""
INSERT INTO claims (token, task_id, worker_id, status, lease_s, claimed_at, lease_expires_at,
                    ready_at, ended_at)
OVERRIDING SYSTEM VALUE
SELECT %(tokens)s + i, 't-b' || i, %(worker)s, 'completed', 60, {PG_AT.format("i + i % 600")},
       {PG_AT.format("i + i % 600 + 60")}, {PG_AT.format("i")},
       {PG_AT.format("i + i % 600 + (7 * i) % 7200")}
FROM {PG_SERIES}""",
    "runs": f"""
INSERT INTO runs (id, task_id, worker_id, token, attempt, started_at, finished_at, exit_code,
                  outcome, command, cwd)
SELECT 'r-b' || i, 't-b' || i, %(worker)s, %(tokens)s + i, 1, {PG_AT.format("i + i % 600")},
       {PG_AT.format("i + i % 600 + (7 * i) % 7200")}, CASE WHEN i % 20 = 0 THEN 1 ELSE 0 END,
       CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'done' END, '["true"]', '/bench'
FROM {PG_SERIES}""",
    "events": f"""
INSERT INTO events (at, name, task_id, worker_id, token, from_status, to_status, actor, data)
SELECT at, name, task_id, worker_id, token, from_status, to_status, actor, data
FROM (SELECT i, 0 AS step, {PG_AT.format("i")} AS at, 'task.created' AS name,
             't-b' || i AS task_id, NULL AS worker_id, NULL::bigint AS token,
             NULL AS from_status, 'ready' AS to_status, 'operator' AS actor,
             NULL::jsonb AS data FROM {PG_SERIES}
      UNION ALL
      SELECT i, 1, {PG_AT.format("i + i % 600")}, 'task.claimed', 't-b' || i, %(worker)s,
             %(tokens)s + i, 'ready', 'running', %(worker)s, NULL FROM {PG_SERIES}
      UNION ALL
      SELECT i, 2, {PG_AT.format("i + i % 600")}, 'run.started', 't-b' || i, %(worker)s,
             %(tokens)s + i, NULL, NULL, %(worker)s,
             jsonb_build_object('run_id', 'r-b' || i, 'attempt', 1) FROM {PG_SERIES}
      UNION ALL
      SELECT i, 3, {PG_AT.format("i + i % 600 + (7 * i) % 7200")},
             CASE WHEN i % 20 = 0 THEN 'task.failed' ELSE 'task.completed' END, 't-b' || i,
             %(worker)s, %(tokens)s + i, 'running',
             CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'done' END, %(worker)s, NULL
      FROM {PG_SERIES}
      UNION ALL
      SELECT i, 4, {PG_AT.format("i + i % 600 + (7 * i) % 7200")}, 'run.finished',
             't-b' || i, %(worker)s, %(tokens)s + i, NULL, NULL, %(worker)s,
             jsonb_build_object('run_id', 'r-b' || i, 'outcome',
                                CASE WHEN i % 20 = 0 THEN 'failed' ELSE 'done' END)
      FROM {PG_SERIES}
      UNION ALL
      SELECT i, 5, {PG_AT.format("i")}, 'worker.stale', NULL, %(worker)s, NULL, 'idle',
             'stale', 'reconciler', NULL FROM {PG_SERIES} WHERE i % 1000 = 0) AS e
ORDER BY i, step""",
}


def cycle(url: str, worker: str, title: str) -> None:
    """One task through corral: added, claimed, run, completed."""
    with open_store(url) as store:
        task = corral.enqueue(store, NewTask(title=title)).id
        claim = corral.claim(store, task, worker)
        run = store.runs.start_run(
            NewRun(
                task_id=task,
                worker_id=worker,
                token=claim.token,
                attempt=1,
                prompt=None,
                command=("true",),
                cwd="/bench",
                transcript_path=None,
                stderr_path=None,
            )
        )
        store.runs.finish_run(run.id, outcome=RunOutcome.DONE, exit_code=0)
        corral.complete(store, task, token=claim.token)


def load(dialect: str, url: str, runs: int) -> str:
    """The store with `runs` runs (the first through corral, the others copies of task
    `first`'s row); the worker's id."""
    with open_store(url) as store:
        worker = register_worker(store, "bench")
        first = corral.enqueue(store, NewTask(title="bench task")).id
    cycle(url, worker, "template")
    with open_store(url) as store:
        base = store.now().timestamp() - runs - 8000  # every copy finished by now
    params = {"count": runs, "first": first, "worker": worker, "tokens": 1000, "base": base}
    if dialect == "sqlite":
        _copy_sqlite(url, params)
    else:
        _copy_postgresql(url, {**params, "base": datetime.fromtimestamp(base, UTC)})
    return worker


def _copy_sqlite(url: str, params: dict[str, Any]) -> None:
    conn = sqlite3.connect(url, timeout=30, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        for sql in SQLITE_COPY.values():
            conn.execute(sql, params)
        conn.execute("COMMIT")
        conn.execute("ANALYZE")
    finally:
        conn.close()


def _copy_postgresql(url: str, params: dict[str, Any]) -> None:
    with psycopg.connect(url) as conn:
        for sql in PG_COPY.values():  # % is psycopg's: the modulo is written %%
            conn.execute(sql.replace(" % ", " %% ").encode(), params)
        conn.commit()
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


class Serve:
    """`corral serve` on the store, restartable, and a viewer token."""

    def __init__(self, url: str, folder: str, port: int) -> None:
        self.env, self.folder, self.port = fresh_process_env(url), folder, port
        made = subprocess.run(
            [CORRAL, "token", "create", "--role", "viewer"],
            env=self.env,
            capture_output=True,
            text=True,
            check=True,
        )
        self.token = made.stdout.strip()

    @contextmanager
    def running(self) -> Iterator[None]:
        argv = [CORRAL, "serve", "--port", str(self.port)]
        with spawned(argv, env=self.env, cwd=self.folder, stderr=subprocess.DEVNULL) as proc:
            deadline = time.monotonic() + 30
            while not self._answers():
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("corral serve did not start")
                time.sleep(0.02)
            yield
            stop_gently(proc)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(self._request("/healthz"), timeout=5) as answer:  # noqa: S310
                status: int = answer.status
                return status == 200
        except OSError:
            return False

    def _request(self, path: str) -> urllib.request.Request:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}")
        request.add_header("Authorization", f"Bearer {self.token}")
        return request

    def get(self, path: str) -> tuple[float, str]:
        """Seconds a GET of `path` took, and its body."""
        started = time.perf_counter()
        with urllib.request.urlopen(self._request(path), timeout=120) as answer:  # noqa: S310
            body = answer.read().decode()
        return time.perf_counter() - started, body


def completed(text: str) -> float:
    """corral_tasks_completed_total, summed over queues and kinds."""
    return sum(
        s.value
        for family in text_string_to_metric_families(text)
        if family.name == "corral_tasks_completed"
        for s in family.samples
        if s.name.endswith("_total")
    )


def timed(call: Callable[[], Any], n: int = 5) -> float:
    """The fastest of `n` calls, in seconds."""
    best = float("inf")
    for _ in range(n):
        started = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - started)
    return best


def measure(dialect: str, runs: int, samples: int, port: int) -> dict[str, Any]:
    """Every figure of one store."""
    with temp_dir("metrics") as folder, store_url(dialect, folder) as url:
        started = time.perf_counter()
        worker = load(dialect, url, runs)
        load_s = time.perf_counter() - started
        serve = Serve(url, folder, port)
        first = []
        for _ in range(FIRST_SAMPLES):
            with serve.running():
                took, text = serve.get("/metrics")
                first.append(took)
        expected = runs - runs // 20  # the template run's, and the copies' but every 20th
        if completed(text) != expected:
            raise RuntimeError(f"corral_tasks_completed_total {completed(text)}, not {expected}")
        with serve.running():
            serve.get("/metrics")
            idle = [serve.get("/metrics")[0] for _ in range(samples)]
            busy = []
            for n in range(samples):
                for k in range(BUSY_TASKS):
                    cycle(url, worker, f"busy {n}.{k}")
                busy.append(serve.get("/metrics")[0])
            floor = [serve.get("/healthz")[0] for _ in range(samples)]
        with open_store(url) as store:
            cursor = store.tallies.event_tallies(None)[1]
            parts = {
                "tallies, whole log": timed(lambda: store.tallies.event_tallies(None), 1),
                "tallies, after the cursor": timed(lambda: store.tallies.event_tallies(cursor)),
                "tasks by queue, kind, status": timed(store.tasks.task_gauges),
                "workers": timed(store.workers.list_workers),
            }
    return {
        "load_s": load_s,
        "first": Spread.of(first),
        "idle": Spread.of(idle),
        "busy": Spread.of(busy),
        "floor": Spread.of(floor),
        "parts": parts,
    }


def main() -> int:
    """Measure each store, print the figures, check the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000, help="runs in the store")
    parser.add_argument("--samples", type=int, default=40, help="scrapes of each kind")
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    opts = parser.parse_args()
    banner("GET /metrics on a big store", __doc__.split("\n\n")[1])
    v = Verdicts("metrics_scrape")
    rows, parts = [], []
    for dialect in opts.stores:
        found = measure(dialect, opts.runs, opts.samples, free_port())
        first, idle, busy, floor = (found[k] for k in ("first", "idle", "busy", "floor"))
        rows.append(
            [
                dialect,
                f"{found['load_s']:.1f}",
                ms(first.p50_s),
                ms(idle.p50_s),
                ms(idle.p95_s),
                ms(busy.p50_s),
                ms(busy.p95_s),
                ms(floor.p50_s),
            ]
        )
        parts += [[dialect, name, ms(s)] for name, s in found["parts"].items()]
        later = found["parts"]["tallies, after the cursor"]
        v.check(f"{dialect}: tallies of a later scrape < 5 ms", ms(later), later < TALLIES_LATER_S)
        v.check(f"{dialect}: first scrape < {FIRST_S:g} s", ms(first.max_s), first.max_s < FIRST_S)
    print(f"{opts.runs} runs; scrapes over HTTP (ms); load: seconds to build the store")
    headers = ["store", "load s", "first p50", "idle p50", "idle p95", "busy p50", "busy p95"]
    print(table([*headers, "healthz p50"], rows))
    print("\nwhat a scrape reads, in this process (ms, fastest of 5; the whole log: 1 run)")
    print(table(["store", "read", "ms"], parts))
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
