"""Runners through PostgreSQL outages: how soon work flows again once the server is back.

- A private PostgreSQL cluster (initdb, pg_ctl; run as the postgres OS user under root) on
  a free port, with 4 plain runners (`corral worker start --exec "sleep 0.05"`, no
  orchestrator) draining a deep queue.
- --outages times: the server is stopped (`pg_ctl stop -m immediate`) while the runners
  work, kept down --down-s seconds, started again; the figure is the time from `pg_ctl
  start` returning to the next task completed (its `task.completed` event's time, on the
  same host's clock). The floor beside it: the same time measured from a restart with no
  outage to speak of (--down-s 0 gives the floor alone), i.e. what the server's own start
  and a first round trip cost.
- Afterwards every task claimed was claimed once, every runner is still running, and no
  task is running with no runner: the promise holds.
- The target (issue 15): work flows again within 1 s (p95) of the store returning.

    .venv/bin/python bench/runner_outage.py [--outages 10] [--down-s 2] [--tasks 3000]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime

import corral
from corral import EventFilter, NewTask, TaskStatus, open_store
from measure import Verdicts, banner, percentile, table, tail

RUNNERS = 4


class Cluster:
    """A throwaway PostgreSQL cluster on a free port."""

    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="corral-bench-pg-")
        if os.geteuid() == 0:
            shutil.chown(self.folder, "postgres")
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        data = os.path.join(self.folder, "data")
        self._as_postgres("initdb", "-D", data, "-A", "trust", "-U", "postgres", "--no-sync")
        self.ctl("start")
        import psycopg  # corral's PostgreSQL driver

        with psycopg.connect(self.url.replace("/corral", "/postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE corral")

    @property
    def url(self) -> str:
        """Its `corral` database."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/corral"

    def ctl(self, *args: str) -> None:
        """pg_ctl on the cluster, waiting for it to finish."""
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        data = os.path.join(self.folder, "data")
        log = os.path.join(self.folder, "server.log")
        self._as_postgres("pg_ctl", "-D", data, "-o", options, "-w", *args, "-l", log)

    def _as_postgres(self, *argv: str) -> None:
        runuser = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        subprocess.run([*runuser, *argv], check=True, capture_output=True, timeout=120)

    def remove(self) -> None:
        """Stop it and remove its files."""
        with contextlib.suppress(subprocess.CalledProcessError):  # stopped already
            self.ctl("-m", "immediate", "stop")
        shutil.rmtree(self.folder, ignore_errors=True)


def _runners(folder: str, url: str) -> list[subprocess.Popen[bytes]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DB"] = url
    env["CORRAL_HEARTBEAT_INTERVAL_S"] = "1"
    corral_bin = os.path.join(os.path.dirname(sys.executable), "corral")
    procs = []
    for n in range(RUNNERS):
        with open(os.path.join(folder, f"w{n}.log"), "wb") as log:
            procs.append(
                subprocess.Popen(
                    [corral_bin, "worker", "start", "--name", f"w{n}", "--exec", "sleep 0.05"],
                    env=env,
                    cwd=folder,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
    return procs


def _first_completion_after(url: str, since: datetime, timeout_s: float = 60) -> float:
    """Seconds from `since` to the first task.completed after it."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open_store(url) as store:
                found = EventFilter(names=("task.completed",), since_at=since, limit=1000)
                events = store.events.list_events(found)
        except corral.CorralError:
            time.sleep(0.01)
            continue
        done = [e.at for e in events if e.at >= since]
        if done:
            return (min(done) - since).total_seconds()
        time.sleep(0.01)
    raise SystemExit(f"no task completed within {timeout_s} s of the server's return")


def _all_registered(url: str, timeout_s: float = 60) -> None:
    """Wait until every runner has registered and beaten once."""
    deadline = time.monotonic() + timeout_s
    with open_store(url) as store:
        working = (corral.WorkerStatus.IDLE, corral.WorkerStatus.BUSY)
        while len(store.workers.list_workers(working)) < RUNNERS:
            if time.monotonic() > deadline:
                raise SystemExit(f"the runners did not all register within {timeout_s} s")
            time.sleep(0.05)


def _outage(cluster: Cluster, down_s: float) -> float:
    """Stop the server, wait `down_s`, start it; seconds until work flowed again."""
    cluster.ctl("-m", "immediate", "stop")
    time.sleep(down_s)
    cluster.ctl("start")
    back = datetime.now(UTC)
    return _first_completion_after(cluster.url, back)


def _promise_holds(url: str) -> tuple[bool, str]:
    """Every task claimed once per run, none done twice; what was found."""
    with open_store(url) as store:
        events = store.events.list_events(EventFilter(limit=1_000_000))
        running = store.tasks.list_tasks(
            corral.TaskFilter(statuses=(TaskStatus.RUNNING,), limit=100)
        )
    completed = Counter(e.task_id for e in events if e.name == "task.completed")
    twice = [t for t, n in completed.items() if n > 1]
    return not twice and len(running) <= RUNNERS, (
        f"{sum(completed.values())} completions, {len(twice)} tasks done twice, "
        f"{len(running)} running at the end"
    )


def main() -> int:
    """Measure, print, judge."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outages", type=int, default=10)
    parser.add_argument("--down-s", type=float, default=2.0)
    parser.add_argument("--tasks", type=int, default=3000)
    args = parser.parse_args()
    banner("runner_outage", f"{RUNNERS} runners, {args.outages} outages of {args.down_s:g} s")
    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
        print("initdb and pg_ctl are not on PATH: no private PostgreSQL server")
        return 1
    cluster = Cluster()
    folder = tempfile.mkdtemp(prefix="corral-bench-outage-")
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with open_store(cluster.url) as store:
            for n in range(args.tasks):
                corral.enqueue(store, NewTask(title=f"task {n}"))
        procs = _runners(folder, cluster.url)
        _all_registered(cluster.url)  # a runner still starting up exits 3 on an outage
        _first_completion_after(cluster.url, datetime.now(UTC))
        floor = [_outage(cluster, 0.0) for _ in range(3)]
        after = []
        for _ in range(args.outages):
            time.sleep(1.0)  # work flows between outages
            after.append(_outage(cluster, args.down_s))
        alive = sum(p.poll() is None for p in procs)
        for n, proc in enumerate(procs):
            if proc.poll() is not None:  # say why: the end of its log
                print(f"runner w{n} exited with status {proc.returncode}:")
                print(tail(os.path.join(folder, f"w{n}.log"), 8))
        held, found = _promise_holds(cluster.url)
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, 15)
        for proc in procs:
            proc.wait(60)
        cluster.remove()
        shutil.rmtree(folder, ignore_errors=True)
    rows = [
        ("restart, no outage (floor)", f"{percentile(floor, 50):.3f}", f"{max(floor):.3f}"),
        (
            f"after {args.down_s:g} s down",
            f"{percentile(after, 50):.3f}",
            f"{percentile(after, 95):.3f}",
        ),
    ]
    print(table(["seconds to the next task done", "median", "p95 (floor: max)"], rows))
    print(f"\n{found}; {alive} of {RUNNERS} runners still running")
    verdicts = Verdicts("runner_outage")
    p95 = percentile(after, 95)
    verdicts.check("work flows again within 1 s (p95)", f"{p95:.3f} s", p95 <= 1.0)
    verdicts.check(
        "every runner still running, nothing done twice", found, held and alive == RUNNERS
    )
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
