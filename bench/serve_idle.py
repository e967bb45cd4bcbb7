"""200 idle remote workers long-polling one `corral serve`: the server's CPU and memory,
on SQLite and on PostgreSQL.

Per store, a fresh `corral serve` (serve_harness.py) over an empty store, and --workers
remote workers held by --processes forked processes, as real runners hold them: each
worker is registered through the server with the worker token, and has a thread of its own
whose `store.claims.exchange` asks for a task, the remote runner's real call (it long-polls
the server up to 30 s, then asks again at once), on its own keep-alive connection. Once
every worker waits and --settle-s has passed, the script reads the server process's CPU
(user + system, psutil) at the start and end of two windows of --seconds, sampling its RSS
every second:

- polls only: the workers only wait (the server holds 200 claims and re-runs each every
  30 s);
- with heartbeats: also, as real runners do, each worker beats every heartbeat interval
  (the settings' default, spread evenly over the interval).

Targets (issue 17), judged on the second window, what a real idle fleet costs: server CPU
< 5% of a core, RSS < 150 MB.

    .venv/bin/python bench/serve_idle.py [--workers 200] [--processes 4] [--seconds 30]
                                         [--settle-s 3] [--stores sqlite postgresql]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import threading
import time
from typing import Any

from corral.foundation.errors import StoreError
from corral.foundation.settings import Settings
from corral.model.exchange import ClaimAsk, RunStart
from measure import Verdicts, banner, register_worker, table, temp_dir
from serve_harness import Server, served

CPU_TARGET = 0.05  # of one core
RSS_TARGET = 150_000_000  # bytes
READY_TIMEOUT_S = 120.0
ASK = ClaimAsk(limit=1, run=RunStart(command=("noop",), cwd="/"))


def idle_child(url: str, token: str, names: range, beat_s: float, flags: dict[str, Any]) -> None:
    """Idle workers named by `names`, each polling on a thread of its own, until `flags["stop"]`;
    heartbeats while `flags["beat"]` is set."""
    import logging

    from corral.store import open_store
    from corral.usecases.workers import heartbeat

    logging.disable(logging.WARNING)
    store = open_store(url, token=token)
    store.wake_on_work(threading.Event())  # as a runner does: its claims long-poll from now
    ids = [register_worker(store, f"idle-{n}") for n in names]
    count = len(ids)
    stop = flags["stop"]
    polls = [threading.Thread(target=_poll, args=(store, w, stop)) for w in ids]
    for thread in polls:
        thread.start()
    flags["ready"].put(count)
    gap_s = beat_s / count
    beats = 0
    while not stop.wait(gap_s):
        if flags["beat"].is_set():
            heartbeat(store, ids[beats % count])
            beats += 1
    store.stop_waiting()
    for thread in polls:
        thread.join()
    store.close()


def _poll(store: Any, worker_id: str, stop: Any) -> None:
    """A runner's idle loop: ask for work, wait on the server, ask again."""
    while not stop.is_set():
        try:
            store.claims.exchange(worker_id, ask=ASK)
        except StoreError:
            if not stop.is_set():
                raise


def window(server: Server, seconds: float) -> tuple[float, int]:
    """The server's CPU share of one core over `seconds`, and its largest RSS then."""
    before = server.usage()
    began = time.monotonic()
    rss = [before.rss_bytes]
    while (left := began + seconds - time.monotonic()) > 0:
        time.sleep(min(1.0, left))
        rss.append(server.usage().rss_bytes)
    after = server.usage()
    return (after.cpu_s - before.cpu_s) / (time.monotonic() - began), max(rss)


def measure_store(dialect: str, opts: argparse.Namespace) -> list[tuple[float, int]]:
    """The two windows on a fresh server of `dialect`."""
    ctx = multiprocessing.get_context("fork")
    flags: dict[str, Any] = {"stop": ctx.Event(), "beat": ctx.Event(), "ready": ctx.Queue()}
    beat_s = Settings().heartbeat_interval_s
    share = opts.workers // opts.processes
    with temp_dir(f"idle-{dialect}") as folder, served(dialect, folder) as server:
        children = [
            ctx.Process(
                target=idle_child,
                args=(
                    server.url,
                    server.worker_token,
                    range(n * share, (n + 1) * share),
                    beat_s,
                    flags,
                ),
            )
            for n in range(opts.processes)
        ]
        for child in children:
            child.start()
        try:
            for _ in children:
                flags["ready"].get(timeout=READY_TIMEOUT_S)
            time.sleep(opts.settle_s)
            polls = window(server, opts.seconds)
            flags["beat"].set()
            beats = window(server, opts.seconds)
        finally:
            flags["stop"].set()
            for child in children:
                child.join(timeout=30)
                if child.is_alive():
                    child.kill()
                    child.join()
    return [polls, beats]


def main() -> int:
    """Measure each store, print the windows, check the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=200, help="idle remote workers")
    parser.add_argument("--processes", type=int, default=4, help="processes holding them")
    parser.add_argument("--seconds", type=float, default=30.0, help="each window")
    parser.add_argument("--settle-s", type=float, default=3.0, help="wait before measuring")
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    opts = parser.parse_args()
    banner("idle remote workers on corral serve", __doc__.split("\n\n")[1])
    v = Verdicts("serve_idle")
    rows = []
    workers = opts.workers // opts.processes * opts.processes
    for dialect in opts.stores:
        found = measure_store(dialect, opts)
        for label, (cpu, rss) in zip(("polls only", "with heartbeats"), found, strict=True):
            rows.append([dialect, label, f"{cpu:.2%}", f"{rss / 1e6:.1f}"])
        cpu, rss = found[1]
        v.check(f"{dialect}: server CPU < 5% of a core", f"{cpu:.2%}", cpu < CPU_TARGET)
        v.check(f"{dialect}: server RSS < 150 MB", f"{rss / 1e6:.1f} MB", rss < RSS_TARGET)
    print(f"{workers} idle remote workers, windows of {opts.seconds:g} s")
    print(table(["store", "window", "server CPU % of a core", "RSS max MB"], rows))
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
