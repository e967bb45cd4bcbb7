"""Request time of the dashboard's pages on a big store, against the same pages on a small
one (issue 18: p95 under 100 ms with 100,000 tasks and 1,000,000 events; the ratio to
1,000 tasks under 2).

For each store and size, the store gets --tasks ready tasks (the rows `enqueue` writes,
copied: bench/measure.py's bulk_load on SQLite, pg_peer.py's copy_task on a scratch
PostgreSQL database) and EVENTS_PER_TASK events each (the task.created event, copied),
then `corral serve` starts on it and each page is loaded --samples times over HTTP on
loopback (urllib; the loopback is open: no token exists). The time is the client's, from
request to the last byte: the server's time plus a loopback round trip. The small store
is the floor, served beside the big one and loaded in turn with it, page by page.

    .venv/bin/python bench/dashboard_pages.py [--tasks 100000] [--samples 50]
                                              [--stores sqlite postgresql]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sqlite3
import sys
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import psycopg

import measure
from corral import NewTask, open_store
from corral.usecases.tasks import enqueue

CORRAL = os.path.join(measure.VENV_BIN, "corral")
FLOOR_TASKS = 1000
EVENTS_PER_TASK = 10
P95_S = 0.100
RATIO = 2.0


def _pages(task_id: str, count: int) -> dict[str, str]:
    middle = count // 2  # a seq in the middle of the table, whatever its size
    return {
        "overview": "/",
        "tasks": "/tasks",
        "tasks, by priority, ready": "/tasks?status=ready&sort=priority",
        "tasks, a later page": f"/tasks?sort=oldest&after=0.{middle}",
        "tasks, a page back": f"/tasks?sort=oldest&before=0.{middle}",
        "tasks, text search": "/tasks?q=no+such+words",
        "task": f"/tasks/{task_id}",
        "events": "/events",
    }


def _seed(url: str, count: int) -> str:
    """`count` tasks and EVENTS_PER_TASK events each; the id of a task in the middle."""
    if "://" not in url:
        return _seed_sqlite(url, count)
    from pg_peer import copy_task

    with open_store(url) as store:
        first = enqueue(store, NewTask(title="bench task")).id
    copy_task(url, first, count, analyze="")
    with psycopg.connect(url, autocommit=True) as conn:
        named = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'events'"
            " AND column_name NOT IN ('id', 'xid', 'task_id') ORDER BY ordinal_position"
        ).fetchall()
        listed = ", ".join(name for (name,) in named)
        from_event = ", ".join(f"e.{name}" for (name,) in named)
        conn.execute(  # the copies have no events yet; the first has its own already
            f"INSERT INTO events ({listed}, task_id) SELECT {from_event}, t.id "
            "FROM events e, tasks t, generate_series(1, %s) AS k "
            "WHERE e.task_id = %s AND t.id <> %s",
            (EVENTS_PER_TASK, first, first),
        )
        conn.execute(
            f"INSERT INTO events ({listed}, task_id) SELECT {from_event}, e.task_id "
            "FROM events e, generate_series(2, %s) AS k WHERE e.task_id = %s",
            (EVENTS_PER_TASK, first),
        )
        conn.execute(b"ANALYZE")
        _say_seeded(conn.execute("SELECT count(*) FROM tasks").fetchone(), conn)
    return f"t-bench{count // 2}"


def _say_seeded(tasks: Any, conn: Any) -> None:
    """Print how many tasks and events the store holds: the sizes the targets name."""
    (events,) = conn.execute("SELECT count(*) FROM events").fetchone()
    print(f"  seeded {tasks[0]:,} tasks, {events:,} events", flush=True)


def _seed_sqlite(path: str, count: int) -> str:
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
        _say_seeded(conn.execute("SELECT count(*) FROM tasks").fetchone(), conn)
    finally:
        conn.close()
    return ids[len(ids) // 2]


def _load(url: str) -> float:
    """Seconds from request to the last byte of `url`."""
    start = time.perf_counter()
    with urllib.request.urlopen(url, timeout=30) as answer:  # noqa: S310 - http://
        answer.read()
    return time.perf_counter() - start


@contextlib.contextmanager
def _served(url: str, count: int) -> Iterator[tuple[str, dict[str, str]]]:
    """`corral serve` on a store seeded with `count` tasks: (its base URL, its pages)."""
    task_id = _seed(url, count)
    port = 8600 + count % 97
    with measure.served_loopback(url, port) as (_, base):
        yield base, _pages(task_id, count)


def _measure(
    floor_url: str, big_url: str, count: int, samples: int
) -> tuple[dict[str, measure.Spread], dict[str, measure.Spread]]:
    """(floor, big): each page's load times on both servers, interleaved (a floor load,
    then the same page's big load, page after page, `samples` rounds) so that the noise
    of a shared machine falls on both alike; each page is loaded once on each, untimed,
    first (a server's first read of a page fills its caches: the overview's snapshot,
    prepared statements, the store's page cache)."""
    with _served(floor_url, FLOOR_TASKS) as floor, _served(big_url, count) as big:
        for server in (floor, big):
            for page in server[1].values():
                _load(server[0] + page)
        times: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in floor[1]}
        for _ in range(samples):
            for name, (at_floor, at_big) in times.items():
                at_floor.append(_load(floor[0] + floor[1][name]))
                at_big.append(_load(big[0] + big[1][name]))
    return (
        {n: measure.Spread.of(f) for n, (f, _) in times.items()},
        {n: measure.Spread.of(b) for n, (_, b) in times.items()},
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    args = parser.parse_args()
    measure.banner(
        "dashboard pages", f"{args.tasks} tasks vs {FLOOR_TASKS}, {args.samples} loads each"
    )
    verdicts = measure.Verdicts("dashboard pages")
    for dialect in args.stores:
        with measure.temp_dir("dashboard") as folder:
            for part in ("floor", "big"):
                os.makedirs(os.path.join(folder, part))
            with (
                measure.store_url(dialect, os.path.join(folder, "floor")) as floor_url,
                measure.store_url(dialect, os.path.join(folder, "big")) as big_url,
            ):
                floor, big = _measure(floor_url, big_url, args.tasks, args.samples)
        _report(dialect, args.tasks, floor, big, verdicts)
    return verdicts.finish()


def _report(
    dialect: str,
    tasks: int,
    floor: dict[str, measure.Spread],
    big: dict[str, measure.Spread],
    verdicts: measure.Verdicts,
) -> None:
    rows = []
    for name, spread in big.items():
        ratio = spread.p95_s / floor[name].p95_s
        times = [floor[name].p50_s, floor[name].p95_s, spread.p50_s, spread.p95_s]
        rows.append([name, *map(measure.ms, times), f"{ratio:.2f}"])
        target = f"{dialect}, {name}: p95 < {measure.ms(P95_S)}"
        verdicts.check(target, measure.ms(spread.p95_s), spread.p95_s < P95_S)
        verdicts.check(f"{dialect}, {name}: ratio < {RATIO}", f"{ratio:.2f}", ratio < RATIO)
    sizes = [f"p50 {FLOOR_TASKS}", f"p95 {FLOOR_TASKS}", f"p50 {tasks}", f"p95 {tasks}"]
    print(f"\n{dialect}")
    print(measure.table(["page", *sizes, "ratio p95"], rows))


if __name__ == "__main__":
    sys.exit(main())
