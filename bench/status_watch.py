"""The CPU of one redraw of `corral status --watch` on a store with a long history.

- The store (SQLite): --finished tasks done, each with its completed claim, finished run,
  event and where its work ended (landed over a day ago, one in a hundred kept),
  bulk-inserted as copies of rows corral wrote (measure.bulk_load, then one transaction
  of executemany); and --running tasks claimed through corral.usecases.claims by 50
  workers, each with a started run whose 20 KB transcript file is on disk.
- One redraw is what the screen does every interval: corral.runtime.pool.glance.glance
  for a 50-row screen (counts, the oldest 50 running tasks, the last line of each one's
  transcript, the newest 50 events, 50 kept and landed tasks) and cli.watch_layout.screen
  for 200 x 50 cells. Timed with time.process_time (this process's CPU; the store is
  in-process here), over --redraws redraws after one warm-up.
- The floor is the same redraw on a fresh store with one running task and no history,
  measured in the same run: the ratio says what the history and the running tasks add.

    .venv/bin/python bench/status_watch.py [--finished 100000] [--running 1000] [--redraws 30]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import time

from corral.cli.watch_layout import screen
from corral.foundation.settings import Settings
from corral.model.runs import NewRun
from corral.model.tasks import NewTask
from corral.runtime.pool.glance import glance
from corral.store import Store, open_store
from corral.usecases import claims
from corral.usecases.tasks import enqueue
from measure import Spread, Verdicts, banner, bulk_load, ms, register_worker, table, temp_dir

CPU_TARGET_S = 0.050  # per redraw, p95
ROWS, COLUMNS = 50, 200
WORKERS = 50
TRANSCRIPT = "".join(f"step {n}: compiled module {n} of the project\n" for n in range(500))


def finish_history(path: str, count: int) -> None:
    """Mark the first `count` tasks done, each with a completed claim and a finished run."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        worker = conn.execute("SELECT id FROM workers LIMIT 1").fetchone()[0]
        ids = [r[0] for r in conn.execute("SELECT id FROM tasks ORDER BY seq LIMIT ?", (count,))]
        now = time.time()
        conn.executemany(
            "UPDATE tasks SET status = 'done', attempts = 1, finished_at = ? WHERE id = ?",
            ((now, t) for t in ids),
        )
        conn.executemany(
            "INSERT INTO claims (task_id, worker_id, status, lease_s, claimed_at, "
            "lease_expires_at, ended_at) VALUES (?, ?, 'completed', 60, ?, ?, ?)",
            ((t, worker, now - 3600, now - 3540, now - 3590) for t in ids),
        )
        done = conn.execute("SELECT token, task_id FROM claims WHERE status = 'completed'")
        conn.executemany(  # each one's work landed a day ago, or kept: the WORK section's
            "INSERT INTO reviews (task_id, base_ref, outcome, merged_commit, outcome_at) "
            "VALUES (?, 'main', ?, ?, ?)",
            (
                (t, "kept" if n % 100 == 0 else "landed", f"{n:040x}", now - 86400 - n)
                for n, t in enumerate(ids)
            ),
        )
        conn.executemany(
            "INSERT INTO runs (id, task_id, worker_id, token, attempt, started_at, finished_at, "
            "outcome, exit_code, cwd) VALUES (?, ?, ?, ?, 1, ?, ?, 'done', 0, '/tmp')",
            [(f"r-{t}", t, worker, token, now - 3600, now - 3590) for token, t in done],
        )
        conn.execute("COMMIT")
    finally:
        conn.close()


def start_running(store: Store, folder: str, workers: list[str], count: int) -> None:
    """Claim `count` ready tasks round the workers, each with a run and a transcript file."""
    for n in range(count):
        claim = claims.claim_next(store, workers[n % len(workers)])
        assert claim is not None, "fewer ready tasks than --running"
        transcript = os.path.join(folder, f"run-{n}.out")
        with open(transcript, "w") as handle:
            handle.write(TRANSCRIPT)
        spec = NewRun(
            task_id=claim.task_id,
            worker_id=claim.worker_id,
            token=claim.token,
            attempt=1,
            prompt=None,
            command=("agent",),
            cwd=folder,
            transcript_path=transcript,
            stderr_path=None,
        )
        store.runs.start_run(spec)


def build(folder: str, finished: int, running: int) -> str:
    """A store with `finished` done tasks and `running` running ones; its path."""
    path = os.path.join(folder, "corral.db")
    with open_store(path) as store:
        workers = [
            register_worker(store, f"w{n}", max_concurrent=running // WORKERS + 1)
            for n in range(WORKERS)
        ]
    bulk_load(path, finished + running)
    finish_history(path, finished)
    with open_store(path) as store:
        start_running(store, folder, workers, running)
    return path


def redraws(path: str, count: int) -> tuple[Spread, int]:
    """CPU seconds of `count` redraws after a warm-up, and the lines of the last screen."""
    settings = Settings()
    with open_store(path) as store:
        times, lines = [], []
        for _ in range(count + 1):
            t0 = time.process_time()
            found = glance(store, settings=settings, running_limit=ROWS, events_limit=ROWS)
            lines = screen(found, width=COLUMNS, height=ROWS, interval_s=1.0, notice=None)
            times.append(time.process_time() - t0)
    return Spread.of(times[1:]), len(lines)


def floor(folder: str, count: int) -> Spread:
    """The same redraws on a fresh store with one running task."""
    os.makedirs(folder)
    path = os.path.join(folder, "corral.db")
    with open_store(path) as store:
        worker = register_worker(store, "floor")
        enqueue(store, NewTask(title="the only task"))
        start_running(store, folder, [worker], 1)
    return redraws(path, count)[0]


def main() -> int:
    """Build the store, time the redraws and the floor, print them, check the target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finished", type=int, default=100_000, help="done tasks (history)")
    parser.add_argument("--running", type=int, default=1_000, help="running tasks")
    parser.add_argument("--redraws", type=int, default=30, help="redraws timed")
    opts = parser.parse_args()
    banner("status --watch redraw", __doc__.split("\n\n")[1])
    v = Verdicts("status --watch redraw")
    with temp_dir("status-watch") as folder:
        t0 = time.monotonic()
        path = build(folder, opts.finished, opts.running)
        print(f"store built in {time.monotonic() - t0:.1f} s\n")
        loaded, lines = redraws(path, opts.redraws)
        empty = floor(os.path.join(folder, "floor"), opts.redraws)
    rows = [
        [f"{opts.finished:,} done + {opts.running:,} running", *_cells(loaded, empty)],
        ["floor: 1 running, no history", *_cells(empty, empty)],
    ]
    print(f"CPU of one redraw ({COLUMNS} x {ROWS} screen, {lines} lines drawn; ms)")
    print(table(["store", "p50", "p95", "max", "p50 / floor"], rows))
    v.check("redraw CPU p95 < 50 ms", f"{ms(loaded.p95_s)} ms", loaded.p95_s < CPU_TARGET_S)
    return v.finish()


def _cells(spread: Spread, base: Spread) -> list[str]:
    return [
        ms(spread.p50_s),
        ms(spread.p95_s),
        ms(spread.max_s),
        f"{spread.p50_s / base.p50_s:.1f}",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
