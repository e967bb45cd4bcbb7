"""The CLI listings' keyset pages at 100,000 rows: a page far in costs what the first costs.

For `list` (tasks by seq), `ready` (claim order), `events` (newest back) and `worker list`
(registration order), on SQLite and on PostgreSQL: the store read of the first page of 50
and of a page 99,900 rows in (after a cursor there), p50 and p95 over `--samples` reads
each, and the ratio far / first (the floor is the first page, measured in the same run).
An OFFSET or a bound the index cannot start from would make the far page read the rows
before it: the ratio says it does not. The query plans (EXPLAIN) are printed beside.

    .venv/bin/python bench/listing_pages.py [--rows 100000] [--samples 30]
"""

from __future__ import annotations

import argparse
import re
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import psycopg

from corral import EventFilter, NewTask, open_store
from corral.model.task_pages import PageKey
from corral.model.tasks import TaskFilter
from corral.model.workers import WorkerFilter
from corral.store import Store
from corral.store.postgres.driver import compile_queries
from corral.store.queries import load_queries
from corral.usecases.tasks import enqueue
from measure import Spread, Verdicts, banner, bulk_load, ms, store_url, table, temp_dir

PAGE = 50
RATIO_TARGET = 2.0
PRIORITIES = 5
QUERIES = ("list_tasks", "ready_tasks", "ready_tasks_tied", "list_events", "find_workers")
WORKERS_SQLITE = """
INSERT INTO workers (id, name, hostname, status, registered_at, last_heartbeat_at)
WITH RECURSIVE n(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM n WHERE k < ?)
SELECT 'w-bench' || k, 'bench', 'host' || (k % 50), 'offline', 0, 0 FROM n"""
WORKERS_PG = """
INSERT INTO workers (id, name, hostname, status, registered_at, last_heartbeat_at)
SELECT 'w-bench' || k, 'bench', 'host' || (k %% 50), 'offline', now(), now()
FROM generate_series(1, %s) AS k"""


def seed(url: str, rows: int) -> None:
    """`rows` tasks of PRIORITIES priorities, each with its task.created event, and `rows`
    workers."""
    if "://" not in url:
        bulk_load(url, rows, priorities=PRIORITIES)
        with sqlite3.connect(url, isolation_level=None) as conn:
            conn.execute(WORKERS_SQLITE, (rows,))
        return
    from pg_peer import copy_task

    with open_store(url) as store:
        first = enqueue(store, NewTask(title="bench task")).id
    copy_task(url, first, rows, analyze="")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE tasks SET priority = seq %% %s", (PRIORITIES,))
        named = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'events'"
            " AND column_name NOT IN ('id', 'xid', 'task_id') ORDER BY ordinal_position"
        ).fetchall()
        listed = ", ".join(name for (name,) in named)
        conn.execute(
            f"INSERT INTO events ({listed}, task_id) SELECT {listed}, t.id FROM"
            f" (SELECT {listed} FROM events WHERE task_id = %s) AS e, tasks t WHERE t.id <> %s",
            (first, first),
        )
        conn.execute(WORKERS_PG, (rows,))
        conn.execute(b"ANALYZE")


def reads(store: Store, rows: int) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """Per listing: (the first page, a page about `rows` - 100 rows in)."""
    tasks = store.tasks.list_tasks(TaskFilter(limit=1, newest_first=True))[0].seq
    events = store.events.list_events(EventFilter(limit=1))[0].id
    far_worker = store.workers.find_workers(WorkerFilter(limit=1))[0].seq + rows - 100
    far_ready = PageKey(priority=0, seq=tasks - 500)  # the last priority, near its end
    return {
        "list": (
            lambda: store.tasks.list_tasks(TaskFilter(limit=PAGE + 1)),
            lambda: store.tasks.list_tasks(TaskFilter(limit=PAGE + 1, after_seq=tasks - 100)),
        ),
        "ready": (
            lambda: store.tasks.ready_tasks(queue=None, kinds=(), limit=PAGE + 1),
            lambda: store.tasks.ready_tasks(queue=None, kinds=(), limit=PAGE + 1, after=far_ready),
        ),
        "events": (
            lambda: store.events.list_events(EventFilter(limit=PAGE + 1)),
            lambda: store.events.list_events(
                EventFilter(limit=PAGE + 1, before_id=events - rows + 100)
            ),
        ),
        "worker list": (
            lambda: store.workers.find_workers(WorkerFilter(limit=PAGE + 1)),
            lambda: store.workers.find_workers(WorkerFilter(limit=PAGE + 1, after_seq=far_worker)),
        ),
    }


def spread(read: Callable[[], Any], samples: int) -> Spread:
    """The spread of `samples` reads, after one to warm the caches."""
    read()
    times = []
    for _ in range(samples):
        began = time.perf_counter()
        read()
        times.append(time.perf_counter() - began)
    return Spread.of(times)


def plans(url: str) -> list[str]:
    """Each listing query's plan (its first scans, on PostgreSQL), with a cursor far in."""
    params: dict[str, Any] = {"limit": PAGE + 1, "after_seq": 5, "priority": 0, "below_priority": 0}
    params |= {"before_id": 5, "after_id": 0, "now": 1e12, "before_xid": None}
    found = []
    if "://" not in url:
        texts = load_queries("sqlite")
        with sqlite3.connect(url) as conn:
            for name in QUERIES:
                wanted = {p: params.get(p) for p in re.findall(r":(\w+)", texts[name])}
                plan = conn.execute("EXPLAIN QUERY PLAN " + texts[name], wanted).fetchall()
                found.append(f"{name}: {plan[0][3]}")
        return found
    _, read = compile_queries(server_clock=True)
    with psycopg.connect(url, autocommit=True) as conn:
        for name in QUERIES:
            wanted = {p: params.get(p) for p in re.findall(r"%\((\w+)\)s", read[name].decode())}
            plan = conn.execute(b"EXPLAIN " + read[name], wanted).fetchall()
            scans = [r[0].strip() for r in plan if "Scan" in r[0] or "Cond" in r[0]]
            found.append(f"{name}: " + " / ".join(scans[:3]))
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=30)
    args = parser.parse_args()
    banner("Listing pages", f"first page vs a page {args.rows - 100:,} rows in")
    verdicts = Verdicts("listing pages")
    out = []
    with temp_dir("corral-listing-pages") as folder:
        for dialect in ("sqlite", "postgresql"):
            with store_url(dialect, folder) as url:
                seed(url, args.rows)
                with open_store(url) as store:
                    for name, (first, far) in reads(store, args.rows).items():
                        a, b = spread(first, args.samples), spread(far, args.samples)
                        ratio = b.p50_s / a.p50_s
                        out.append(
                            [dialect, name, ms(a.p50_s), ms(a.p95_s), ms(b.p50_s), ms(b.p95_s)]
                        )
                        out[-1].append(f"{ratio:.2f}")
                        verdicts.check(
                            f"{dialect} {name}: far page p50 <= {RATIO_TARGET:g}x the first's",
                            f"{ratio:.2f}x",
                            ratio <= RATIO_TARGET,
                        )
                for line in plans(url):
                    print(f"{dialect} plan  {line}")
    headers = ["store", "listing", "first p50", "first p95", "far p50", "far p95", "far/first"]
    print(table(headers, out))
    return verdicts.finish()


if __name__ == "__main__":
    raise SystemExit(main())
