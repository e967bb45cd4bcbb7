"""Commit to printed line: `corral events --follow --json` under four writer processes.

For each store, a follower (`.venv/bin/corral events --follow --json`) runs while 4 writer
processes each enqueue --per-writer tasks through corral (one `task.created` event per
commit), pausing 0 to 10 ms between enqueues. A writer notes time.time() right after each
enqueue returns (its commit); this script notes time.time() when it reads the event's
line from the follower's stdout. One machine, one clock: the difference is the latency,
commit to line, pipe included. The floor is a bare reader in the same run: a process
polling `id > last` every millisecond with no store code (no safe read, no filters) and
printing what it finds, read the same way; on PostgreSQL it misses the events whose
transaction committed after one with a higher id, and the table counts them. Idle CPU is
the follower's over --idle-s with nothing written: what following costs while nothing
happens.

    .venv/bin/python bench/events_follow.py [--per-writer 250] [--idle-s 3]
                                            [--stores sqlite postgresql]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from contextlib import ExitStack

import psutil

from measure import (
    VENV_BIN,
    Spread,
    Verdicts,
    banner,
    fresh_process_env,
    ms,
    spawned,
    store_url,
    table,
    temp_dir,
)

CORRAL = os.path.join(VENV_BIN, "corral")
WRITERS = 4
P95_TARGET_S = {"sqlite": 0.100, "postgresql": 0.050}
READY_TIMEOUT_S = 30.0

WRITER = """
import json, random, sys, time
from corral import NewTask, enqueue, open_store

url, count, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rng = random.Random(sys.argv[4])
with open_store(url) as store:
    while not __import__("os").path.exists(go):
        time.sleep(0.001)
    done = []
    for n in range(count):
        task = enqueue(store, NewTask(title=f"bench {n}"))
        done.append((task.id, time.time()))
        time.sleep(rng.uniform(0, 0.010))
print(json.dumps(done))
"""

# The floor: the fastest a reader sees a committed row, with no store code in between.
FLOOR = """
import sys, time
url = sys.argv[1]
if url.startswith("postgresql"):
    import psycopg
    conn = psycopg.connect(url, autocommit=True)
else:
    import sqlite3
    conn = sqlite3.connect(url, isolation_level=None)
last = conn.execute("SELECT coalesce(max(id), 0) FROM events").fetchone()[0]
print("ready", flush=True)
while True:
    rows = conn.execute(
        "SELECT id, task_id FROM events WHERE id > %s ORDER BY id".replace(
            "%s", "%s" if url.startswith("postgresql") else "?"), (last,)).fetchall()
    for event_id, task_id in rows:
        print(task_id, flush=True)
        last = event_id
    time.sleep(0.001)
"""


class Reader:
    """Reads a child's stdout on a thread, stamping each line with time.time()."""

    def __init__(self, proc: subprocess.Popen[str], parse: str) -> None:
        self.seen: dict[str, float] = {}
        self.lines = 0
        self._proc, self._parse = proc, parse
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        for line in self._proc.stdout:
            at = time.time()
            self.lines += 1
            task_id = json.loads(line)["task_id"] if self._parse == "json" else line.strip()
            self.seen.setdefault(task_id, at)

    def wait_quiet(self, count: int, quiet_s: float) -> None:
        """Until `count` lines were read, or none came for `quiet_s` (a reader that missed
        some: tailing by id on PostgreSQL does)."""
        seen, since = self.lines, time.monotonic()
        while self.lines < count and time.monotonic() - since < quiet_s:
            time.sleep(0.005)
            if self.lines != seen:
                seen, since = self.lines, time.monotonic()

    def wait_lines(self, count: int, timeout_s: float) -> None:
        """Until `count` lines were read; RuntimeError after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while self.lines < count:
            if time.monotonic() > deadline or self._proc.poll() is not None:
                raise RuntimeError(f"read {self.lines} lines of {count} (exit {self._proc.poll()})")
            time.sleep(0.005)


def write(url: str, folder: str, per_writer: int) -> dict[str, float]:
    """Run the writers at once; task id -> the time its commit returned."""
    go = os.path.join(folder, "go")
    argv = [sys.executable, "-c", WRITER, url]
    procs = [
        subprocess.Popen([*argv, str(per_writer), go, str(n)], stdout=subprocess.PIPE, text=True)
        for n in range(WRITERS)
    ]
    time.sleep(0.5)  # let the writers import corral and open the store before "go"
    open(go, "w").close()
    committed: dict[str, float] = {}
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        if proc.returncode != 0:
            raise RuntimeError(f"a writer exited {proc.returncode}")
        committed.update(json.loads(out))
    return committed


def measure(dialect: str, per_writer: int, idle_s: float) -> tuple[list[float], list[float], float]:
    """Latencies of the follower and of the floor (s; the floor's of the events it saw),
    and the follower's idle CPU (%)."""
    with temp_dir("follow") as folder, store_url(dialect, folder) as url, ExitStack() as stack:
        subprocess.run(
            [CORRAL, "init"],
            env=fresh_process_env(url),
            cwd=folder,
            check=True,
            capture_output=True,
        )
        pipes = {"stdout": subprocess.PIPE, "text": True, "env": fresh_process_env(url)}
        follower = stack.enter_context(spawned([CORRAL, "events", "--follow", "--json"], **pipes))
        floor = stack.enter_context(spawned([sys.executable, "-c", FLOOR, url], **pipes))
        assert floor.stdout is not None
        floor.stdout.readline()  # "ready"
        ours, bare = Reader(follower, "json"), Reader(floor, "id")
        time.sleep(0.5)  # the follower has read its first (empty) page
        cpu = psutil.Process(follower.pid)
        before = cpu.cpu_times()
        time.sleep(idle_s)
        after = cpu.cpu_times()
        idle_pct = 100 * (after.user + after.system - before.user - before.system) / idle_s
        committed = write(url, folder, per_writer)
        total = WRITERS * per_writer
        ours.wait_lines(total, READY_TIMEOUT_S)
        bare.wait_quiet(total, quiet_s=1.0)
    return (
        [ours.seen[t] - at for t, at in committed.items()],
        [bare.seen[t] - at for t, at in committed.items() if t in bare.seen],
        idle_pct,
    )


def main() -> int:
    """Measure each store, print the spreads, check the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-writer", type=int, default=250, help="enqueues per writer")
    parser.add_argument("--idle-s", type=float, default=3.0, help="idle CPU sample")
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    opts = parser.parse_args()
    banner("events --follow: commit to printed line", __doc__.split("\n\n")[1])
    v = Verdicts("events_follow")
    rows = []
    for dialect in opts.stores:
        latencies, floor, idle_pct = measure(dialect, opts.per_writer, opts.idle_s)
        ours, bare = Spread.of(latencies), Spread.of(floor)
        rows.append(
            [
                dialect,
                ours.n,
                ms(ours.p50_s),
                ms(ours.p95_s),
                ms(ours.max_s),
                ms(bare.p50_s),
                ms(bare.p95_s),
                f"{ours.p95_s / bare.p95_s:.1f}x",
                ours.n - bare.n,
                f"{idle_pct:.2f}",
            ]
        )
        target = P95_TARGET_S[dialect]
        v.check(f"{dialect} p95 < {ms(target)} ms", f"{ms(ours.p95_s)} ms", ours.p95_s < target)
    print(f"commit to line, {WRITERS} writers (ms); floor: a bare 1 ms `id > last` poll")
    print(
        table(
            [
                "store",
                "events",
                "p50",
                "p95",
                "max",
                "floor p50",
                "floor p95",
                "p95/floor",
                "floor missed",
                "idle CPU %",
            ],
            rows,
        )
    )
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
