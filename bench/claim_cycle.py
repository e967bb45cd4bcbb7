"""Claim + complete cycles per second on SQLite, corral's service layer beside the raw floor.

Each process owns one registered worker and loops: claim the next ready task, complete it.

- `corral`: `corral.usecases.claims.claim_next` then `corral.usecases.claims.complete`, one
  store per process.
- `raw`: the same named statements from the project's queries.sql, in the same order and
  with the same parameters as the exchange runs them for one claim or one report, in a
  bare sqlite3 loop: BEGIN IMMEDIATE, SQLite's busy handler only (no flock), tuples for
  rows, no records, no events built from records.
  Same connection pragmas as the driver (synchronous=NORMAL, foreign_keys=ON).
- `raw+flock` (4 processes only, a diagnosis): the raw loop behind the driver's flock.

Runs are interleaved (every mode and process count, then again) so the machine's noise
falls on all of them alike; figures are medians over the repetitions. Claim latency is
the time of the claim transaction alone, from asking for the lock to COMMIT.

    .venv/bin/python bench/claim_cycle.py [--seconds 2.5] [--reps 3]
"""

from __future__ import annotations

import argparse
import fcntl
import os
import sqlite3
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from corral.store import open_store
from corral.store.queries import load_queries
from corral.usecases import claims
from measure import (
    Spread,
    Verdicts,
    banner,
    bulk_load,
    ms,
    new_store,
    register_worker,
    run_processes,
    table,
    temp_dir,
)

PROCESS_COUNTS = (1, 2, 4)
TASKS_PER_RUN = 40_000
MODES = ("raw", "corral")
FAIRNESS_MODES = ("raw", "raw+flock", "corral")
P99_TARGET_S = 0.020


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """What one benchmark process runs: which loop, on which store, as which worker."""

    index: int
    mode: str
    path: str
    worker_id: str
    seconds: float


Claim = Callable[[], tuple[str, int]]
Complete = Callable[[str, int], None]


def cycle_loop(start: Any, job: Job) -> dict[str, Any]:
    """Claim and complete until `job.seconds` have passed; cycles and claim latencies."""
    claim, complete, close = _cycle(job)
    claim_s: list[float] = []
    start.wait()
    began = time.perf_counter()
    deadline = began + job.seconds
    while time.perf_counter() < deadline:
        t0 = time.perf_counter()
        task_id, token = claim()
        claim_s.append(time.perf_counter() - t0)
        complete(task_id, token)
    elapsed = time.perf_counter() - began
    close()
    return {"index": job.index, "cycles": len(claim_s), "elapsed_s": elapsed, "claim_s": claim_s}


def _cycle(job: Job) -> tuple[Claim, Complete, Callable[[], None]]:
    if job.mode != "corral":
        raw = RawCycle(job.path, job.worker_id, flock=job.mode == "raw+flock")
        return raw.claim, raw.complete, raw.conn.close
    store = open_store(job.path)

    def claim() -> tuple[str, int]:
        found = claims.claim_next(store, job.worker_id)
        if found is None:
            raise RuntimeError("the queue ran dry: raise TASKS_PER_RUN")
        return found.task_id, found.token

    def complete(task_id: str, token: int) -> None:
        claims.complete(store, task_id, token=token)

    return claim, complete, store.close


class RawCycle:
    """The SQL of one claim_next + complete, statement for statement, on a bare connection."""

    def __init__(self, path: str, worker_id: str, *, flock: bool) -> None:
        self.q = load_queries("sqlite")
        self.conn = sqlite3.connect(path, timeout=10.0, isolation_level=None)
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.execute("PRAGMA foreign_keys = ON")
        self.lock_fd = os.open(path + ".lock", os.O_RDWR | os.O_CREAT, 0o644) if flock else None
        self.worker_id = worker_id
        columns = [r[1] for r in self.conn.execute("PRAGMA table_info(tasks)")]
        self.id_at, self.timeout_at = columns.index("id"), columns.index("timeout_s")

    @contextmanager
    def tx(self) -> Iterator[Callable[..., list[Any]]]:
        """BEGIN IMMEDIATE ... COMMIT (behind the flock when asked); yields `run(name, **p)`."""
        if self.lock_fd is not None:
            fcntl.flock(self.lock_fd, fcntl.LOCK_EX)
        try:
            now = time.time()
            self.conn.execute("BEGIN IMMEDIATE")

            def run(query: str, /, **params: Any) -> list[Any]:
                params["now"] = now
                params["namespace"] = "default"  # the store handle's, as its driver binds it
                return self.conn.execute(self.q[query], params).fetchall()

            yield run
            self.conn.execute("COMMIT")
        finally:
            if self.lock_fd is not None:
                fcntl.flock(self.lock_fd, fcntl.LOCK_UN)

    def claim(self) -> tuple[str, int]:
        """claim_next, as the exchange asks for one claim: the claiming worker, claim_tasks
        (limit 1), insert_claim, record_claimed, worker_after_claim."""
        w = self.worker_id
        with self.tx() as run:
            worker = run("claiming_worker", worker_id=w)[0]
            found = run(
                "claim_tasks",
                worker_id=w,
                worker_name=worker[1],
                kinds=None,
                queues=None,
                limit=1,
            )
            if not found:
                raise RuntimeError("the queue ran dry: raise TASKS_PER_RUN")
            task_id, timeout_s = found[0][self.id_at], found[0][self.timeout_at]
            claim = run(
                "insert_claim", task_id=task_id, timeout_s=timeout_s, worker_id=w, lease_s=1800.0
            )
            token: int = claim[0][0]
            run("record_claimed", first=token, actor=w)
            run("worker_after_claim", worker_id=w, completed=0, failed=0)
        return task_id, token

    def complete(self, task_id: str, token: int) -> None:
        """complete, as the exchange applies one report: end_reported_claim, complete_task
        (which returns the task as it is now), note_reported (on the claim's open run, if
        any), record_finished, unblock_dependents (only when a task depends on this one),
        worker_after_claim."""
        w = self.worker_id
        with self.tx() as run:
            run("end_reported_claim", task_id=task_id, token=token, holder=None, released=False)
            done = run(
                "complete_task",
                task_id=task_id,
                result=None,
                completed_to='["done","in_review"]',
                allowed='["running"]',
            )
            run("note_reported", holder=w, token=token, reported="done")
            run("record_finished", tokens=f"[{token}]", actor=None, run_ids=None)
            if done[0][2]:
                run("unblock_dependents", task_ids=f'["{task_id}"]', allowed='["blocked"]')
            run("worker_after_claim", worker_id=w, completed=1, failed=0)


def one_run(mode: str, procs: int, seconds: float) -> list[dict[str, Any]]:
    """A fresh store, `procs` workers, one process each; each process's figures."""
    with temp_dir("cycle") as folder:
        path = os.path.join(folder, "corral.db")
        with new_store(path) as store:
            workers = [register_worker(store, f"bench-{i}") for i in range(procs)]
        bulk_load(path, TASKS_PER_RUN)
        jobs = [
            (Job(index=i, mode=mode, path=path, worker_id=w, seconds=seconds),)
            for i, w in enumerate(workers)
        ]
        results = run_processes(cycle_loop, jobs, timeout_s=seconds + 60)
    return sorted(results, key=lambda r: r["index"])


def rate(results: list[dict[str, Any]]) -> float:
    """Aggregate cycles per second of one run."""
    return float(sum(r["cycles"] / r["elapsed_s"] for r in results))


def fairness_row(mode: str, rep: int, results: list[dict[str, Any]]) -> tuple[list[Any], float]:
    """One table row of shares and claim latencies, and the lowest share over an equal one."""
    total = sum(r["cycles"] for r in results)
    shares = [r["cycles"] / total for r in results]
    lowest = min(shares) * len(results)
    spread = Spread.of([s for r in results for s in r["claim_s"]])
    row = [
        mode,
        rep,
        " ".join(f"{s:.2f}" for s in shares),
        f"{lowest:.2f}",
        ms(spread.p50_s),
        ms(spread.p99_s),
        ms(spread.max_s),
    ]
    return row, lowest


Runs = dict[tuple[str, int], list[list[dict[str, Any]]]]


def claims_of(runs: Runs, mode: str, procs: int) -> list[float]:
    """Every claim latency of every rep of (mode, procs)."""
    return [s for run in runs[(mode, procs)] for r in run for s in r["claim_s"]]


def print_throughput(runs: Runs, med: dict[tuple[str, int], float]) -> None:
    """Cycles per second by process count, corral beside raw."""
    print("\nthroughput (median of reps, cycles/s; ratio = corral / raw in the same runs)")
    rows = []
    for procs in PROCESS_COUNTS:
        raw, svc = med[("raw", procs)], med[("corral", procs)]
        p50 = Spread.of(claims_of(runs, "corral", procs)).p50_s
        rows.append([procs, f"{raw:.0f}", f"{svc:.0f}", f"{svc / raw:.2f}", ms(p50)])
    print(table(["processes", "raw", "corral", "ratio", "corral claim p50 ms"], rows))


def print_fairness(runs: Runs) -> tuple[float, Spread]:
    """Shares and latencies with 4 processes; corral's lowest share and latency spread."""
    print("\nfairness, 4 processes (share of claims per process; lowest share / equal share)")
    rows = []
    lowest_corral = 1.0
    for mode in FAIRNESS_MODES:
        for rep, results in enumerate(runs[(mode, 4)], start=1):
            row, lowest = fairness_row(mode, rep, results)
            rows.append(row)
            if mode == "corral":
                lowest_corral = min(lowest_corral, lowest)
    print(table(["mode", "rep", "shares", "lowest/equal", "p50 ms", "p99 ms", "max ms"], rows))
    pooled = {mode: Spread.of(claims_of(runs, mode, 4)) for mode in FAIRNESS_MODES}
    print("\nclaim latency, 4 processes, all reps pooled (ms)")
    rows = [[m, s.n, ms(s.p50_s), ms(s.p99_s), ms(s.max_s)] for m, s in pooled.items()]
    print(table(["mode", "claims", "p50", "p99", "max"], rows))
    return lowest_corral, pooled["corral"]


def main() -> int:
    """Run the interleaved matrix, print throughput and fairness, check the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.5, help="length of each run")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of the whole matrix")
    opts = parser.parse_args()
    banner("claim + complete cycles", __doc__.split("\n\n")[1])
    print(f"{TASKS_PER_RUN:,} ready tasks at the start of every run; {opts.seconds} s per run\n")

    runs: Runs = {}
    plan = [(m, p) for p in PROCESS_COUNTS for m in MODES] + [("raw+flock", 4)]
    for rep in range(opts.reps):
        for mode, procs in plan:
            results = one_run(mode, procs, opts.seconds)
            runs.setdefault((mode, procs), []).append(results)
            print(f"  rep {rep + 1} {mode:9} x{procs}: {rate(results):7.0f} cycles/s", flush=True)
    med = {key: statistics.median(rate(r) for r in reps) for key, reps in runs.items()}
    print_throughput(runs, med)
    lowest, latency = print_fairness(runs)

    v = Verdicts("claim_cycle")
    ratio_1 = med[("corral", 1)] / med[("raw", 1)]
    v.check("corral >= 60% of raw, 1 process", f"{ratio_1:.0%}", ratio_1 >= 0.6)
    x4, x1 = med[("corral", 4)], med[("corral", 1)]
    # The owner retired "x4 >= x1" (docs/benchmarks.md: on two cores SQLite's single
    # writer cannot reach it) for this bound.
    v.check(
        "corral x4 aggregate >= 0.8 x corral x1",
        f"{x4:.0f} vs {x1:.0f}/s ({x4 / x1:.2f}x)",
        x4 >= 0.8 * x1,
    )
    v.check("corral x4: every process >= half an equal share", f"{lowest:.2f}", lowest >= 0.5)
    p99 = latency.p99_s
    v.check("corral x4: p99 claim latency < 20 ms", f"{ms(p99)} ms", p99 < P99_TARGET_S)
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
