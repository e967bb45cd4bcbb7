"""What every benchmark shares: spreads of timings, tables, verdicts, throwaway stores,
bulk loading through the project's own SQL, and child processes that always get reaped.

Timings are seconds from `time.perf_counter`; tables print milliseconds. The machine the
figures come from is small and noisy, so every script prints ratios beside absolutes and
interleaves the things it compares.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import shutil
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from corral.ids import TASK_PREFIX, new_id
from corral.queue import enqueue
from corral.registry import heartbeat, register
from corral.store import Store, open_store
from corral.tasks import NewTask
from corral.workers import NewWorker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV_BIN = os.path.join(ROOT, ".venv", "bin")
DATE = "2026-11-22"


def percentile(values: Sequence[float], pct: float) -> float:
    """The `pct`-th percentile of `values`, interpolated between ranks (numpy's default)."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = (len(ordered) - 1) * pct / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass(frozen=True, slots=True, kw_only=True)
class Spread:
    """Median, tail and worst of a sample of durations in seconds."""

    n: int
    p50_s: float
    p95_s: float
    p99_s: float
    max_s: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        """The spread of `values`."""
        return cls(
            n=len(values),
            p50_s=percentile(values, 50),
            p95_s=percentile(values, 95),
            p99_s=percentile(values, 99),
            max_s=max(values, default=float("nan")),
        )


def ms(seconds: float) -> str:
    """Seconds as milliseconds, two decimals."""
    return f"{seconds * 1000:.2f}"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A plain text table, first column left-aligned, the others right-aligned."""
    cells = [[str(h) for h in headers], *[[str(c) for c in row] for row in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]

    def line(row: list[str]) -> str:
        parts = [row[0].ljust(widths[0])]
        parts += [c.rjust(w) for c, w in zip(row[1:], widths[1:], strict=True)]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule, *[line(r) for r in cells[1:]]])


class Verdicts:
    """The targets of one benchmark and whether each was met; prints them and the exit code."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.rows: list[tuple[str, str, str]] = []

    def check(self, target: str, measured: str, met: bool) -> None:
        """Record one target with its measured figure."""
        self.rows.append((target, measured, "PASS" if met else "MISS"))

    def missed(self) -> bool:
        """True if any target was missed."""
        return any(v == "MISS" for _, _, v in self.rows)

    def finish(self) -> int:
        """Print the verdict table; exit code 1 if a target was missed."""
        print(f"\n{self.title}: targets")
        print(table(["target", "measured", "verdict"], self.rows))
        return 1 if self.missed() else 0


def banner(title: str, what: str) -> None:
    """The heading every script prints: what, where, when."""
    print(f"== {title} ==")
    print(what)
    print(
        f"date {DATE} (figures are this run's); {os.cpu_count()} cores; "
        f"Python {sys.version.split()[0]}; SQLite {sqlite3.sqlite_version}\n"
    )


@contextmanager
def temp_dir(prefix: str) -> Iterator[str]:
    """A fresh directory, removed with everything in it afterwards."""
    path = tempfile.mkdtemp(prefix=f"corral-bench-{prefix}-")
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def new_store(path: str) -> Store:
    """A store at `path`, created and migrated by corral itself."""
    return open_store(path)


def register_worker(store: Store, name: str, *, max_concurrent: int = 1) -> str:
    """Register a worker and send its first heartbeat (so it is idle); its id."""
    beat = register(store, NewWorker(name=name, max_concurrent=max_concurrent))
    heartbeat(store, beat.worker.id)
    return beat.worker.id


def bulk_load(path: str, count: int, *, priorities: int = 1) -> list[str]:
    """Add `count` ready tasks, each with its `task.created` event, in one transaction.

    The first task goes through `corral.queue.enqueue`; the others are copies of the rows
    it wrote (tasks and events), with fresh ids, inserted by executemany. So every row
    and every index is what `enqueue` leaves, whatever its parameters are this week,
    without a round of Python per task. Priorities cycle through 0..priorities-1, so
    the claim order is not the insert order. Returns the ids in insert order.
    """
    with open_store(path) as store:
        first = enqueue(store, NewTask(title="bench task")).id
    ids = [first] + [new_id(TASK_PREFIX) for _ in range(count - 1)]
    conn = sqlite3.connect(path, timeout=30, isolation_level=None)
    try:
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("BEGIN IMMEDIATE")
        task = _template(conn, "SELECT * FROM tasks WHERE id = ?", first, "seq")
        event = _template(conn, "SELECT * FROM events WHERE task_id = ?", first, "id")
        tasks = ({**task, "id": t, "priority": n % priorities} for n, t in enumerate(ids))
        conn.executemany(_insert("tasks", task), itertools.islice(tasks, 1, None))
        conn.executemany(_insert("events", event), ({**event, "task_id": t} for t in ids[1:]))
        conn.execute("COMMIT")
    finally:
        conn.close()
    return ids


def _template(conn: sqlite3.Connection, sql: str, task_id: str, key: str) -> dict[str, Any]:
    """The row `sql` finds for `task_id`, without its generated key column."""
    row = dict(conn.execute(sql, (task_id,)).fetchone())
    del row[key]
    return row


def _insert(table: str, row: dict[str, Any]) -> str:
    """An INSERT of every column in `row`, by name (the names come from the schema)."""
    return f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join(':' + c for c in row)})"


def iso_now() -> str:
    """The current instant as corral writes it in events."""
    return datetime.now(UTC).isoformat()


def _child(target: Callable[..., Any], args: tuple[Any, ...], start: Any, out: Any) -> None:
    try:
        out.put(("ok", target(start, *args)))
    except BaseException as exc:  # reported to the parent, which raises it there
        out.put(("error", f"{type(exc).__name__}: {exc}"))


def run_processes(
    target: Callable[..., Any], args_list: Sequence[tuple[Any, ...]], *, timeout_s: float
) -> list[Any]:
    """Run `target(start, *args)` in one forked process per entry; their return values.

    `start` is a barrier over all the children: each calls `start.wait()` when its set-up
    is done, so the measured parts begin together. Children still alive at `timeout_s` are
    killed; every child is joined before this returns.
    """
    ctx = multiprocessing.get_context("fork")
    start = ctx.Barrier(len(args_list))
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_child, args=(target, args, start, out), daemon=True)
        for args in args_list
    ]
    for proc in procs:
        proc.start()
    try:
        results = [_result(out, timeout_s) for _ in procs]
    finally:
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()
    return results


def _result(out: Any, timeout_s: float) -> Any:
    status, value = out.get(timeout=timeout_s)
    if status != "ok":
        raise RuntimeError(f"a benchmark process failed: {value}")
    return value


def dump(data: Any) -> str:
    """Compact JSON for a child process's answer."""
    return json.dumps(data, separators=(",", ":"))
