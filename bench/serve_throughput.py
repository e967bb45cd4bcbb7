"""Claim + complete cycles per second through `corral serve` with 1, 4 and 16 remote runners,
beside the floor of the same framework and server, and the same runners on the store itself.

For each runner count N, three things run one after the other (the order is the same in
every rep; --reps reps, the figures are medians):

- floor: N processes, each a remote store's transport on a Starlette app whose one POST route reads
  its body and answers `{"result":{}}`, under uvicorn with `corral serve`'s options
  (serve_harness.py); each process posts --tasks/N times through the remote store's own
  request code (one keep-alive http.client connection, the answer's JSON read). A cycle of
  a remote runner is one such request (its exchange: the last task's report and the next
  claim), so the floor's requests/s is what the framework and server allow at best.
- corral: a fresh `corral serve` over a SQLite store bulk-loaded with --tasks ready tasks;
  N processes each call `corral.run_worker(noop, db=URL, token=WORKER_TOKEN,
  max_tasks=--tasks/N)`, the runner users get.
- local: the same N runners straight on a SQLite store of --tasks tasks (no HTTP): the
  ceiling the store's own transactions allow on this machine.

Each process notes the instant of each task or request it finishes; the rate is that of the
middle 80% of all those instants (start-up and the last stragglers left out). The server's
CPU (its process, psutil) is read before and after each run: its CPU per cycle beside the
floor's per request. Targets (issue 17): corral ≥ 40% of the floor at each N; 16 runners ≥
0.8x 4 runners (no collapse).

    .venv/bin/python bench/serve_throughput.py [--tasks 2000] [--reps 2] [--runners 1 4 16]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from measure import Verdicts, banner, bulk_load, new_store, run_processes, table, temp_dir
from serve_harness import Server, floor_post, floor_server, served

RATIO_TARGET = 0.40
COLLAPSE_TARGET = 0.8
CHILD_TIMEOUT_S = 300.0
TRIM = 0.10  # of the instants at each end, left out of the rate
FLOOR_BODY = b'{"worker_id":"w-bench","reports":[],"pad":"' + b"x" * 400 + b'"}'


def runner_child(start: Any, db: str, token: str | None, tasks: int, name: str) -> list[float]:
    """A runner with a no-op function: the instant each of its `tasks` tasks ran."""
    import logging

    from corral import run_worker

    logging.disable(logging.INFO)  # the runner's start and stop lines
    done: list[float] = []

    def noop(task: Any, ctx: Any) -> None:
        done.append(time.perf_counter())

    start.wait()
    code = run_worker(noop, db=db, token=token, max_tasks=tasks, name=name)
    if code != 0 or len(done) != tasks:
        raise RuntimeError(f"runner {name} exited {code} after {len(done)} of {tasks} tasks")
    return done


def floor_child(start: Any, url: str, requests: int) -> list[float]:
    """`requests` POSTs to the floor through a remote store: the instant each answered."""
    from corral.store.remote.transport import HttpTransport

    store = HttpTransport(url, token="corral_floor")  # noqa: S106 - the floor checks none
    floor_post(store, FLOOR_BODY)  # the connection opened before the clock
    done: list[float] = []
    start.wait()
    for _ in range(requests):
        floor_post(store, FLOOR_BODY)
        done.append(time.perf_counter())
    store.close()
    return done


def rate(instants: list[list[float]]) -> float:
    """Events per second over the middle of every process's instants, merged."""
    merged = sorted(t for each in instants for t in each)
    cut = int(len(merged) * TRIM)
    window = merged[cut : len(merged) - cut]
    return (len(window) - 1) / (window[-1] - window[0])


def measured(server: Server | None, run: Callable[[], list[list[float]]]) -> tuple[float, float]:
    """The rate of `run` and the server's CPU seconds per event during it (nan: no server)."""
    before = server.usage() if server else None
    instants = run()
    cpu = (server.usage().cpu_s - before.cpu_s) if server and before else float("nan")
    return rate(instants), cpu / sum(len(each) for each in instants)


def floor_run(floor: Server, runners: int, tasks: int) -> tuple[float, float]:
    """The floor with `runners` client processes."""
    args = [(floor.url, tasks // runners)] * runners
    return measured(floor, lambda: run_processes(floor_child, args, timeout_s=CHILD_TIMEOUT_S))


def corral_run(folder: str, runners: int, tasks: int) -> tuple[float, float]:
    """`runners` remote runners draining `tasks` tasks through a fresh server."""
    with served("sqlite", folder) as server:
        bulk_load(server.db, tasks)
        args = [
            (server.url, server.worker_token, tasks // runners, f"remote-{n}")
            for n in range(runners)
        ]
        return measured(
            server, lambda: run_processes(runner_child, args, timeout_s=CHILD_TIMEOUT_S)
        )


def local_run(folder: str, runners: int, tasks: int) -> float:
    """`runners` runners draining `tasks` tasks straight on a SQLite store."""
    path = os.path.join(folder, "local.db")
    new_store(path).close()
    bulk_load(path, tasks)
    args = [(path, None, tasks // runners, f"local-{n}") for n in range(runners)]
    return rate(run_processes(runner_child, args, timeout_s=CHILD_TIMEOUT_S))


def one_rep(folder: str, floor: Server, counts: list[int], tasks: int) -> dict[int, list[float]]:
    """Per runner count: floor rate, floor CPU/req, corral rate, corral CPU/cycle, local rate."""
    found = {}
    for n in counts:
        with temp_dir(f"serve-{n}") as remote_dir, temp_dir(f"local-{n}") as local_dir:
            floor_rate, floor_cpu = floor_run(floor, n, tasks)
            corral_rate, corral_cpu = corral_run(remote_dir, n, tasks)
            local_rate = local_run(local_dir, n, tasks)
        found[n] = [floor_rate, floor_cpu, corral_rate, corral_cpu, local_rate]
        print(
            f"  {n:>2} runners: floor {floor_rate:,.0f}/s, corral {corral_rate:,.0f}/s, "
            f"local {local_rate:,.0f}/s",
            flush=True,
        )
    return found


def main() -> int:
    """Measure every runner count --reps times, print the medians, check the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=2000, help="tasks (requests) per run")
    parser.add_argument("--reps", type=int, default=2, help="reps of every runner count")
    parser.add_argument("--runners", type=int, nargs="+", default=[1, 4, 16])
    opts = parser.parse_args()
    banner("claim + complete through corral serve", __doc__.split("\n\n")[1])
    reps = []
    with temp_dir("serve-floor") as folder, floor_server(folder) as floor:
        for rep in range(opts.reps):
            print(f"rep {rep + 1} of {opts.reps}", flush=True)
            reps.append(one_rep(folder, floor, opts.runners, opts.tasks))
    medians = {
        n: [statistics.median(r[n][k] for r in reps) for k in range(5)] for n in opts.runners
    }
    return report(medians, opts.tasks)


def report(medians: dict[int, list[float]], tasks: int) -> int:
    """Print the table of medians and judge them."""
    rows = []
    for n, (floor_rate, floor_cpu, corral_rate, corral_cpu, local_rate) in medians.items():
        rows.append(
            [
                str(n),
                f"{floor_rate:,.0f}",
                f"{corral_rate:,.0f}",
                f"{corral_rate / floor_rate:.2f}",
                f"{local_rate:,.0f}",
                f"{corral_rate / local_rate:.2f}",
                f"{floor_cpu * 1000:.3f}",
                f"{corral_cpu * 1000:.3f}",
            ]
        )
    print(f"\n{tasks} no-op tasks (floor: requests) per run; medians; rates per second")
    headers = ["runners", "floor req/s", "corral cycles/s", "÷ floor", "local cycles/s"]
    print(table([*headers, "÷ local", "floor CPU ms/req", "server CPU ms/cycle"], rows))
    v = Verdicts("serve_throughput")
    for n, (floor_rate, _, corral_rate, _, _) in medians.items():
        ratio = corral_rate / floor_rate
        v.check(f"{n} runners: ≥ 40% of the floor", f"{ratio:.2f}", ratio >= RATIO_TARGET)
    if 4 in medians and 16 in medians:
        collapse = medians[16][2] / medians[4][2]
        v.check("16 runners ≥ 0.8x 4 runners", f"{collapse:.2f}x", collapse >= COLLAPSE_TARGET)
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
