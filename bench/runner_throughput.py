"""End to end beside a peer: corral's `run_worker` and huey's SQLite consumer, each with one
worker thread, drain the same number of no-op tasks, in the same run.

- corral: a fresh process (this script with --child corral) calls
  `corral.run_worker(lambda task, ctx: None, db=PATH, max_tasks=N, batch=B)` on a store
  bulk-loaded with N ready tasks, and times the whole call: register, N claim / run record
  / execute / report cycles, deregister. It runs twice per rep: with B = 1 (one task per
  transaction) and with B = --batch (claims of up to B tasks, their reports together; the
  batch grows from 1 while the queue stays deep). The runner's log goes to a file, as a
  supervisor would keep it (its per-task lines are DEBUG, so there are none at INFO).
- huey: a fresh process (--child huey) enqueues N no-op tasks on a `SqliteHuey` with huey's
  defaults (untimed), then starts a consumer set up as `huey_consumer -w 1` sets it up (one
  worker thread and the scheduler; log lines at INFO to stderr, here a file, two a task),
  and times from `Consumer.start()` until the N-th task has run.
- The three alternate, in both orders, --reps times each; the figures are medians. The
  target is met when batched corral drains at least as fast as huey (>= 1.0x: issue 28's
  target, taking per-task record building out of the exchange's Python). On a miss, or
  with --profile, a further process drains --profile-tasks tasks through batched corral
  with its phases timed (measure.PhaseTimer) and the script prints where one task's time
  goes.

huey is installed only for this benchmark: `.venv/bin/pip install -e '.[bench]'`.

    .venv/bin/python bench/runner_throughput.py [--tasks 20000] [--reps 3] [--batch 64] [--profile]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from typing import Any

from measure import (
    PhaseTimer,
    Verdicts,
    banner,
    bulk_load,
    count_tasks,
    dump,
    new_store,
    phase_rows,
    spawned,
    table,
    tail,
    temp_dir,
)

CHILD_TIMEOUT_S = 240
WAL_TASKS = 200  # drained after the profile, with checkpoints off, to count WAL frames
HUEY_MISSING = "huey is not installed: run `.venv/bin/pip install -e '.[bench]'` (exit 2)"
ISSUE_HUEY_RATE = 4_300  # tasks/s, the issue's own measurement of huey
TARGET_VS_HUEY = 1.0  # batched corral / huey, issue 28's target


# -- children -------------------------------------------------------------------------------


def corral_child(path: str, tasks: int, batch: int) -> dict[str, Any]:
    """Drain the store with one run_worker and a no-op function; the call's wall time."""
    from corral import run_worker  # a lazy import: done before the clock starts

    began = time.perf_counter()
    code = run_worker(
        lambda task, ctx: None, db=path, max_tasks=tasks, name="bench-py", batch=batch
    )
    elapsed = time.perf_counter() - began
    return {"seconds": elapsed, "code": code, "done": count_tasks(path, "done")}


def huey_child(path: str, tasks: int, _batch: int) -> dict[str, Any]:
    """Enqueue `tasks` no-op tasks, then time huey's consumer (one thread) draining them."""
    import logging
    import threading

    from huey import SqliteHuey
    from huey.consumer_options import ConsumerConfig

    huey = SqliteHuey(name="bench", filename=path)
    ran = [0]
    finished = threading.Event()

    @huey.task()  # type: ignore[untyped-decorator]  # huey has no type hints (pyproject)
    def noop() -> None:
        ran[0] += 1  # one worker thread: no race
        if ran[0] == tasks:
            finished.set()

    for _ in range(tasks):
        noop()
    config = ConsumerConfig(workers=1)  # huey_consumer's defaults, with -w 1
    config.validate()
    config.setup_logger(logging.getLogger("huey"))  # as huey_consumer does: INFO to stderr
    consumer = huey.create_consumer(**config.values)
    began = time.perf_counter()
    consumer.start()
    drained = finished.wait(CHILD_TIMEOUT_S - 30)
    elapsed = time.perf_counter() - began
    consumer.stop(graceful=True)
    return {"seconds": elapsed, "code": 0 if drained else 1, "done": ran[0]}


def profile_child(path: str, tasks: int, batch: int) -> dict[str, Any]:
    """Drain the store like corral_child, with the runner's phases and statements timed."""
    from corral import run_worker
    from corral.runtime.worker import batches, lanes, python_job
    from corral.store import sqlite as driver
    from corral.store.claims import Claims

    timer = PhaseTimer()
    timer.wrap(Claims, "exchange", "store.claims.exchange: its Python (rows, records, params)")
    timer.wrap(lanes, "event", "runner: log lines (per task: DEBUG, off)")
    timer.wrap(batches, "event", "runner: log lines (per task: DEBUG, off)")
    timer.wrap(python_job, "run_callable", "runner: execute (the no-op) and its Done")
    timer.wrap_context(driver.SQLiteDriver, "_transaction", begin_label, commit_label)
    # Every way a statement runs, `send` and `send_rows` too: the exchange writes its
    # events and runs with them, and untimed they would count as the exchange's Python.
    for method in ("one", "all", "run", "send", "send_rows"):
        timer.wrap(driver._Tx, method, lambda _tx, query, *_, **__: f"SQL {query}")
    began = time.perf_counter()
    code = run_worker(
        lambda task, ctx: None, db=path, max_tasks=tasks, name="bench-prof", batch=batch
    )
    elapsed = time.perf_counter() - began
    timer.restore()
    done = count_tasks(path, "done")
    return {
        "seconds": elapsed,
        "code": code,
        "done": done,
        "phases": timer.report(),
        "missing": timer.missing,
        "wal_frames": wal_frames(path, WAL_TASKS, batch),
    }


def begin_label(_driver: Any, begin: str, **_: Any) -> str:
    """The phase that opens a transaction of the SQLite driver."""
    return "write txn: flock + BEGIN IMMEDIATE" if begin != "BEGIN" else "read txn: BEGIN"


def commit_label(_driver: Any, begin: str, **_: Any) -> str:
    """The phase that ends a transaction of the SQLite driver."""
    if begin == "BEGIN":
        return "read txn: COMMIT"
    return "write txn: COMMIT (WAL write), unlock"


def wal_frames(path: str, tasks: int, batch: int) -> float:
    """WAL frames (pages) one task writes, over a drain of `tasks` with checkpoints off.

    A reader holds a snapshot from the start, so the WAL cannot restart and only grows.
    """
    from corral import run_worker
    from corral.store import sqlite as driver

    every = driver.CHECKPOINT_EVERY
    driver.CHECKPOINT_EVERY = 1 << 62
    pin = sqlite3.connect(path, isolation_level=None)
    try:
        page = pin.execute("PRAGMA page_size").fetchone()[0]
        pin.execute("BEGIN")
        pin.execute("SELECT count(*) FROM workers").fetchone()
        before = os.path.getsize(path + "-wal")
        run_worker(lambda task, ctx: None, db=path, max_tasks=tasks, name="bench-wal", batch=batch)
        grown = os.path.getsize(path + "-wal") - before
        pin.execute("COMMIT")
    finally:
        pin.close()
        driver.CHECKPOINT_EVERY = every
    return float(grown / (page + 24) / tasks)  # each frame: a 24-byte header and one page


CHILDREN = {"corral": corral_child, "huey": huey_child, "profile": profile_child}


# -- parent ---------------------------------------------------------------------------------


def run_child(kind: str, path: str, tasks: int, log: str, batch: int = 1) -> dict[str, Any]:
    """Run one child of `kind` on `path`; its report. Its stderr (log lines) goes to `log`."""
    argv = [sys.executable, os.path.abspath(__file__), "--child", kind, path, str(tasks)]
    argv.append(str(batch))
    with open(log, "w") as err, spawned(argv, stdout=subprocess.PIPE, stderr=err, text=True) as p:
        out, _ = p.communicate(timeout=CHILD_TIMEOUT_S)
    if p.returncode != 0:
        raise RuntimeError(f"the {kind} child exited {p.returncode}:\n{tail(log)}")
    report: dict[str, Any] = json.loads(out)
    if report["code"] != 0 or report["done"] != tasks:
        raise RuntimeError(f"the {kind} child ran {report['done']} of {tasks} tasks: {report}")
    return report


def one_rep(folder: str, rep: int, tasks: int, batch: int) -> dict[str, float]:
    """corral (batch 1 and `batch`) and huey once each, in alternating order; side -> tasks/s."""
    sides = {"corral": ("corral", 1), "batched": ("corral", batch), "huey": ("huey", 1)}
    order = list(sides) if rep % 2 == 0 else list(reversed(sides))
    rates = {}
    for side in order:
        kind, size = sides[side]
        path = os.path.join(folder, f"{side}-{rep}.db")
        if kind == "corral":
            new_store(path).close()
            bulk_load(path, tasks)
        log = os.path.join(folder, f"{side}-{rep}.log")
        rates[side] = tasks / run_child(kind, path, tasks, log, size)["seconds"]
        for suffix in ("", "-wal", "-shm", ".lock"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)
    return rates


def profile(folder: str, tasks: int, batch: int, huey_rate: float) -> None:
    """Drain `tasks` tasks with the phases timed; print where one task's time goes, and
    its SQL and COMMIT beside huey's whole task (`huey_rate`, this run's median)."""
    path = os.path.join(folder, "profile.db")
    new_store(path).close()
    bulk_load(path, tasks + WAL_TASKS)
    report = run_child("profile", path, tasks, os.path.join(folder, "profile.log"), batch)
    phases: dict[str, list[float]] = report["phases"]
    total = report["seconds"]
    print(
        f"\nwhere one corral task's time goes (batch {batch}): {tasks:,} tasks drained with "
        f"every phase timed ({tasks / total:,.0f} tasks/s with the timers on); us and calls "
        "per task, exclusive"
    )
    rest = "the rest: the runner's loop, ids, contexts, threads; register, deregister"
    print(table(["phase", "us", "calls", "share"], phase_rows(phases, tasks, total, rest)))
    summary(report, tasks)
    floor(phases, tasks, huey_rate)
    if report["missing"]:
        print(f"(not found in the code, so not timed: {', '.join(report['missing'])})")


def summary(report: dict[str, Any], tasks: int) -> None:
    """Transactions, statements, WAL frames and their time per task, from a profile report."""
    phases: dict[str, list[float]] = report["phases"]

    def per_task(prefix: str, index: int) -> float:
        return sum(v[index] for k, v in phases.items() if k.startswith(prefix)) / tasks

    writes = per_task("write txn: flock", 1)
    commits_us = per_task("write txn: COMMIT", 0) * 1e6
    print(
        f"per task: {writes:.2f} write and {per_task('read txn: BEGIN', 1):.2f} read "
        f"transactions; {per_task('SQL ', 1):.1f} statements "
        f"({per_task('SQL insert_event', 1):.1f} of them event rows), "
        f"{per_task('SQL ', 0) * 1e6:,.0f} us; COMMITs {commits_us:,.0f} us, writing "
        f"{report['wal_frames']:.1f} WAL frames (pages) a task, "
        f"{report['wal_frames'] / writes:.1f} a write transaction.\n"
        "huey, per task: one `begin exclusive` transaction (SELECT the first task, DELETE it), "
        "an unpickle, two log lines."
    )


def floor(phases: dict[str, list[float]], tasks: int, huey_rate: float) -> None:
    """A corral task's statements and COMMIT alone beside huey's whole task: while the
    first is the larger, no Python taken out of the runner reaches 1.0x."""
    sql_s = sum(v[0] for k, v in phases.items() if k.startswith(("SQL ", "write txn: COMMIT")))
    sql_us, huey_us = sql_s / tasks * 1e6, 1e6 / huey_rate
    print(
        f"a corral task's SQL and COMMIT alone: {sql_us:,.0f} us (timers on); huey's whole "
        f"task in this run: {huey_us:,.0f} us; 1.0x leaves {huey_us - sql_us:,.0f} us for "
        "all of corral's Python."
    )


def main() -> int:
    """Alternate the drains, print the rates, check the target, profile on a miss."""
    if len(sys.argv) == 6 and sys.argv[1] == "--child":
        child = CHILDREN[sys.argv[2]]
        print(dump(child(sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000, help="tasks each side drains")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=64, help="most tasks a batched claim takes")
    parser.add_argument("--profile", action="store_true", help="always show the phases")
    parser.add_argument("--profile-tasks", type=int, default=5_000)
    opts = parser.parse_args()
    if importlib.util.find_spec("huey") is None:
        print(HUEY_MISSING)
        return 2
    banner("run_worker beside huey (end to end)", __doc__.split("\n\n")[1])
    v = Verdicts("runner_throughput")
    with temp_dir("throughput") as folder:
        reps = [one_rep(folder, rep, opts.tasks, opts.batch) for rep in range(opts.reps)]
        medians = {side: statistics.median(r[side] for r in reps) for side in reps[0]}
        rows = [_row(f"rep {i + 1}", r) for i, r in enumerate(reps)]
        rows.append(_row("median", medians))
        print(f"{opts.tasks:,} no-op tasks drained by one worker thread (tasks/s)")
        heads = ["", "corral batch 1", f"corral batch {opts.batch}", "huey consumer"]
        print(table([*heads, "batch 1 / huey", "batched / huey"], rows))
        print(f"(the issue measured huey at about {ISSUE_HUEY_RATE:,} tasks/s)")
        batched, huey = medians["batched"], medians["huey"]
        v.check(
            f"run_worker (batch {opts.batch}) drains no-op tasks >= {TARGET_VS_HUEY}x huey",
            f"{batched:,.0f} vs {huey:,.0f} tasks/s ({batched / huey:.2f}x)",
            batched >= TARGET_VS_HUEY * huey,
        )
        if v.missed() or opts.profile:
            profile(folder, opts.profile_tasks, opts.batch, huey)
    return v.finish()


def _row(label: str, rates: dict[str, float]) -> list[str]:
    c, b, h = rates["corral"], rates["batched"], rates["huey"]
    return [label, f"{c:,.0f}", f"{b:,.0f}", f"{h:,.0f}", f"{c / h:.2f}", f"{b / h:.2f}"]


if __name__ == "__main__":
    sys.exit(main())
