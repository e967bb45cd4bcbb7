"""Work after a PostgreSQL outage: how soon a pool claims again once the server is back.

A private server (initdb into a temporary folder, its own port) under an orchestrator of
4 workers running `sleep 1` tasks with a backlog. Each round: the 4 workers busy, the
server stopped with `pg_ctl stop -m immediate`, left down --outage-s, started again. The
instant it is back is the new postmaster's start (`pg_postmaster_start_time()`, before
its crash recovery: a little early, so the figures err long). From then:

- first claim: until the first `task.claimed` event the pool commits after the stop (the
  event's time is the server's clock, the same host's). Target: p95 < 1 s (issue 15).
- every worker: until each of the 4 workers has claimed again.
- floor: a process that was never away: the bench connects every 2 ms until the server
  accepts, then a fresh `open_store` and one enqueue. The ratio is first claim / floor.

    .venv/bin/python bench/outage_recovery.py [--rounds 8] [--outage-s 5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import psycopg

from corral import EventFilter, NewTask, TaskFilter, TaskStatus, enqueue, load_settings
from corral.store import Store, open_store
from measure import Spread, Verdicts, banner, ms, table
from pool_harness import pool_env, running, wait_running

WORKERS = 4
TARGET_P95_S = 1.0


class Server:
    """A throwaway PostgreSQL cluster on a free port (as the postgres OS user when root)."""

    def __init__(self, folder: str) -> None:
        self.folder = folder
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/corral"

    def ctl(self, *args: str) -> None:
        """pg_ctl on the cluster."""
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        data = os.path.join(self.folder, "data")
        log = os.path.join(self.folder, "server.log")
        command = ["pg_ctl", "-D", data, "-o", options, "-l", log, *args]
        subprocess.run([*_as_postgres(), *command], check=True, capture_output=True, timeout=60)

    def started_at(self) -> datetime:
        """When the running postmaster started."""
        with psycopg.connect(self.url) as conn:
            row = conn.execute("SELECT pg_postmaster_start_time()").fetchone()
        assert row is not None
        started: datetime = row[0]
        return started

    def accepting(self) -> bool:
        """Whether the server takes a connection now."""
        try:
            psycopg.connect(self.url, connect_timeout=1).close()
        except psycopg.OperationalError:
            return False
        return True


def _as_postgres() -> list[str]:
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


@contextmanager
def private_server() -> Iterator[Server]:
    """A fresh cluster with a `corral` database; stopped and removed after."""
    folder = tempfile.mkdtemp(prefix="corral-bench-pg-")
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    initdb = ["initdb", "-D", os.path.join(folder, "data"), "-A", "trust", "-U", "postgres"]
    subprocess.run([*_as_postgres(), *initdb, "--no-sync"], check=True, capture_output=True)
    server = Server(folder)
    try:
        server.ctl("-w", "start")
        with psycopg.connect(server.url.replace("/corral", "/postgres"), autocommit=True) as c:
            c.execute("CREATE DATABASE corral")
        yield server
    finally:
        stop = ["pg_ctl", "-D", os.path.join(folder, "data"), "-m", "immediate", "stop"]
        subprocess.run([*_as_postgres(), *stop], capture_output=True, check=False)
        shutil.rmtree(folder, ignore_errors=True)


def _until(predicate, timeout_s: float = 60.0, interval_s: float = 0.002):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not (found := predicate()):
        if time.monotonic() > deadline:
            raise SystemExit(f"condition not met within {timeout_s:g} s")
        time.sleep(interval_s)
    return found


def _fill(store: Store, env: dict[str, str], backlog: int) -> None:
    """Enough ready tasks that every worker has one to claim after the outage."""
    ready = store.tasks.list_tasks(TaskFilter(statuses=(TaskStatus.READY,), limit=1000))
    for _ in range(backlog - len(ready)):
        enqueue(store, NewTask(title="work"), settings=load_settings(env))


def _busy(store: Store) -> bool:
    running = store.tasks.list_tasks(TaskFilter(statuses=(TaskStatus.RUNNING,), limit=100))
    return len(running) == WORKERS


def _claims_after(store: Store, back_at: datetime) -> list[datetime]:
    """The first claim of each worker committed after `back_at`, in order."""
    first: dict[str, datetime] = {}
    for e in store.events.list_events(EventFilter(names=("task.claimed",), limit=100_000)):
        if e.at > back_at and e.worker_id is not None:
            first[e.worker_id] = min(first.get(e.worker_id, e.at), e.at)
    return sorted(first.values())


def _all_claimed(store: Store, back_at: datetime) -> list[datetime] | None:
    """The workers' first claims after `back_at`, once every worker has claimed."""
    claims = _claims_after(store, back_at)
    return claims if len(claims) >= WORKERS else None


Figures = tuple[float, float, float]


def one_outage(server: Server, store: Store, env: dict[str, str], outage_s: float) -> Figures:
    """(first claim, every worker claimed, floor) in seconds after the server accepts."""
    _fill(store, env, backlog=3 * WORKERS)
    _until(lambda: _busy(store))
    server.ctl("-m", "immediate", "stop")
    stopped_at = datetime.now(UTC)  # no claim commits from here until the server is back
    time.sleep(outage_s)  # the outage is the subject
    server.ctl("start")
    _until(server.accepting, interval_s=0.002)
    with open_store(server.url) as fresh:
        enqueue(fresh, NewTask(title="floor"), settings=load_settings(env))
    floor_at = datetime.now(UTC)
    back_at = server.started_at()
    floor_s = (floor_at - back_at).total_seconds()
    claims = _until(lambda: _all_claimed(store, stopped_at), interval_s=0.01)
    return (
        (claims[0] - back_at).total_seconds(),
        (claims[WORKERS - 1] - back_at).total_seconds(),
        floor_s,
    )


def main() -> int:
    """Measure --rounds outages; print each, the spreads and the verdict."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8, help="outages to measure")
    parser.add_argument("--outage-s", type=float, default=5.0, help="how long each lasts")
    args = parser.parse_args()
    banner("outage_recovery", f"{args.rounds} PostgreSQL outages of {args.outage_s:g} s")
    rows = []
    with private_server() as server:
        env = pool_env(server.url)
        store = open_store(server.url)
        with running(server.url, workers=WORKERS, exec_cmd="sleep 1", folder=server.folder):
            wait_running(store, WORKERS)
            for n in range(args.rounds):
                first_s, all_s, floor_s = one_outage(server, store, env, args.outage_s)
                rows.append((first_s, all_s, floor_s))
                shown = f"first claim {ms(first_s)} ms, all {ms(all_s)} ms"
                print(f"outage {n + 1}: {shown}, floor {ms(floor_s)} ms", flush=True)
        store.close()
    spreads = [Spread.of([r[i] for r in rows]) for i in range(3)]
    names = ("first claim", f"all {WORKERS} workers claimed", "floor: a fresh process's write")
    lines = [
        (n, ms(s.p50_s), ms(s.p95_s), ms(s.max_s)) for n, s in zip(names, spreads, strict=True)
    ]
    print()
    print(table(["after the server is back", "p50 ms", "p95 ms", "max ms"], lines))
    ratio = spreads[0].p50_s / spreads[2].p50_s
    print(f"\nfirst claim / floor (p50): {ratio:.1f}x")
    verdicts = Verdicts("outage_recovery")
    p95 = spreads[0].p95_s
    verdicts.check("first claim p95 < 1 s", f"{ms(p95)} ms", p95 < TARGET_P95_S)
    return verdicts.finish()


if __name__ == "__main__":
    raise SystemExit(main())
