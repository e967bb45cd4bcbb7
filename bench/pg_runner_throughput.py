"""Runners on PostgreSQL beside procrastinate's worker: no-op tasks drained end to end.

Each run drains the same number of no-op tasks from a fresh database on the same server
with 1, 4 and 8 worker processes, and is timed from the launch of the first process to
the exit of the last, so start-up, registration and shutdown count as they do for a user.

- `corral batch 1`: each process calls `corral.run_worker(lambda task, ctx: None, db=URL,
  max_tasks=N/P)`: one task claimed, run and reported at a time, as every agent worker
  runs. A runner reports a task together with its next claim (docs/workers.md).
- `corral batch 64`: the same with `batch=64` (claims of up to 64 tasks at once).
- `procrastinate`: the peer (extra `pgbench-peer`): each process runs
  `app.run_worker(concurrency=1, wait=False)` on a no-op task deferred N times, and exits
  when the queue is empty.

The three alternate within each repetition; figures are medians over repetitions. Only
corral's public API is used, so the script measures any version of corral alike.

    .venv/bin/pip install -e '.[pgbench-peer]'
    .venv/bin/python bench/pg_runner_throughput.py [--tasks 20000] [--reps 1] [--batch 64]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import psycopg

from measure import Verdicts, banner, dump, table, tail, temp_dir
from pg_peer import SERVER, copy_task, load_procrastinate, procrastinate_app, scratch_database

PROCESS_COUNTS = (1, 4, 8)
CHILD_TIMEOUT_S = 900


# -- loading --------------------------------------------------------------------------------


def load_corral(url: str, tasks: int) -> None:
    """`tasks` ready tasks: one enqueued through corral's public API, copied by the server."""
    import corral

    with corral.open_store(url) as store:
        first = corral.enqueue(store, corral.NewTask(title="bench task")).id
    # As autovacuum would after the load: the table that changed, not the empty ones
    # (analyzed empty, claims and runs would be planned as empty for the whole run:
    # docs/benchmarks.md, section 13, has both states).
    copy_task(url, first, tasks, analyze="tasks")


def done_count(url: str, side: str) -> int:
    """Tasks finished in the run's database, counted by the system that ran them."""
    sql = (
        "SELECT count(*) FROM procrastinate_jobs WHERE status = 'succeeded'"
        if side == "procrastinate"
        else "SELECT count(*) FROM tasks WHERE status = 'done'"
    )
    with psycopg.connect(url) as conn:
        row = conn.execute(sql.encode()).fetchone()
        return int(row[0]) if row else 0


# -- children -------------------------------------------------------------------------------


def corral_child(url: str, quota: int, batch: int, index: int) -> int:
    """One corral runner: drain `quota` tasks with a no-op function; its exit code."""
    import corral

    return corral.run_worker(
        lambda task, ctx: None, db=url, max_tasks=quota, batch=batch, name=f"bench-{index}"
    )


def procrastinate_child(url: str, _quota: int, _batch: int, _index: int) -> int:
    """One procrastinate worker (concurrency 1) until the queue is empty."""
    app = procrastinate_app(url)
    with app.open():
        app.run_worker(concurrency=1, wait=False, install_signal_handlers=False)
    return 0


CHILDREN = {"corral": corral_child, "procrastinate": procrastinate_child}


# -- parent ---------------------------------------------------------------------------------


def drain(side: str, url: str, tasks: int, procs: int, *, batch: int, folder: str) -> float:
    """Launch `procs` children together, wait for all; seconds from first launch to last exit."""
    quotas = [tasks // procs + (1 if i < tasks % procs else 0) for i in range(procs)]
    kind = "procrastinate" if side == "procrastinate" else "corral"
    logs = [os.path.join(folder, f"{side}-x{procs}-{i}.log") for i in range(procs)]
    children = []
    began = time.perf_counter()
    for i, quota in enumerate(quotas):
        argv = [sys.executable, os.path.abspath(__file__), "--child", kind, url]
        argv += [str(quota), str(batch), str(i)]
        with open(logs[i], "w") as err:
            children.append(subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err))
    codes = [child.wait(timeout=CHILD_TIMEOUT_S) for child in children]
    elapsed = time.perf_counter() - began
    for code, log in zip(codes, logs, strict=True):
        if code != 0:
            raise RuntimeError(f"a {side} child exited {code}:\n{tail(log)}")
    return elapsed


def one_run(side: str, procs: int, tasks: int, batch: int, folder: str) -> float:
    """Drain `tasks` tasks with `procs` processes in a fresh database; tasks per second."""
    with scratch_database() as url:
        if side == "procrastinate":
            load_procrastinate(url, tasks)
        else:
            load_corral(url, tasks)
        size = batch if side == "corral batch N" else 1
        elapsed = drain(side, url, tasks, procs, batch=size, folder=folder)
        finished = done_count(url, side)
    if finished != tasks:
        raise RuntimeError(f"{side} x{procs}: {finished} of {tasks} tasks finished")
    return tasks / elapsed


def main() -> int:
    """Run the interleaved matrix, print the table, check the targets."""
    if len(sys.argv) == 7 and sys.argv[1] == "--child":
        _, _, kind, url, quota, batch, index = sys.argv
        return CHILDREN[kind](url, int(quota), int(batch), int(index))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=20_000, help="tasks drained by every run")
    parser.add_argument("--reps", type=int, default=1, help="repetitions of the whole matrix")
    parser.add_argument("--batch", type=int, default=64, help="most tasks a batched claim takes")
    parser.add_argument("--json", metavar="FILE", help="also write the rates to FILE")
    opts = parser.parse_args()
    try:
        import procrastinate  # noqa: F401  (the peer; only checked for here)

        with psycopg.connect(SERVER, connect_timeout=5) as conn:
            version = conn.execute("SHOW server_version").fetchone()
    except (ImportError, psycopg.Error) as exc:
        print(f"pg_runner_throughput: cannot run: {str(exc).splitlines()[0]}")
        print("needs procrastinate (pip install -e '.[pgbench-peer]') and a server at " + SERVER)
        return 2
    banner("Runners on PostgreSQL beside procrastinate", __doc__.split("\n\n")[1])
    print(
        f"server {SERVER} (PostgreSQL {version[0] if version else '?'}); {opts.tasks} tasks/run\n"
    )
    sides = ("corral batch 1", "corral batch N", "procrastinate")
    rates: dict[tuple[str, int], list[float]] = {}
    with temp_dir("pg-runner") as folder:
        for rep in range(opts.reps):
            for procs in PROCESS_COUNTS:
                order = sides if (rep + procs) % 2 else tuple(reversed(sides))
                for side in order:
                    rate = one_run(side, procs, opts.tasks, opts.batch, folder)
                    rates.setdefault((side, procs), []).append(rate)
                    print(f"  rep {rep + 1} {side:15} x{procs}: {rate:7.0f} tasks/s", flush=True)
    med = {key: statistics.median(values) for key, values in rates.items()}
    if opts.json:
        with open(opts.json, "w") as out:
            out.write(dump({f"{s} x{p}": r for (s, p), r in med.items()}))
    return report(med, opts.batch)


def report(med: dict[tuple[str, int], float], batch: int) -> int:
    """Print the table of medians and check the targets; the exit code."""
    print("\nthroughput (median of reps, tasks/s, launch of the first process to exit of the last)")
    rows = []
    for procs in PROCESS_COUNTS:
        one, many, peer = (
            med[(s, procs)] for s in ("corral batch 1", "corral batch N", "procrastinate")
        )
        rows.append(
            [
                procs,
                f"{one:.0f}",
                f"{many:.0f}",
                f"{peer:.0f}",
                f"{one / peer:.2f}",
                f"{many / peer:.2f}",
            ]
        )
    heads = ["processes", "corral batch 1", f"corral batch {batch}", "procrastinate"]
    print(table([*heads, "batch 1 / procr.", f"batch {batch} / procr."], rows))
    v = Verdicts("pg_runner_throughput")
    for procs in PROCESS_COUNTS:
        one, many, peer = (
            med[(s, procs)] for s in ("corral batch 1", "corral batch N", "procrastinate")
        )
        v.check(f"batch 1 ahead of procrastinate, x{procs}", f"{one / peer:.2f}x", one > peer)
        v.check(
            f"batch {batch} at least 3x procrastinate, x{procs}",
            f"{many / peer:.2f}x",
            many >= 3 * peer,
        )
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
