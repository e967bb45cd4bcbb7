"""An idle runner: its CPU and memory over a window, and how fast it exits on SIGTERM.

- Idle: `.venv/bin/corral worker start --name bench-idle --exec true` on an empty store.
  Once the store shows the worker idle, the script reads the process's user + system CPU
  time (psutil `cpu_times`, in clock ticks of 10 ms) at the start and end of a --seconds
  window, samples its RSS (psutil `memory_info().rss`) every second, and counts its
  voluntary context switches (each one a wake-up from a wait). The runner then gets
  SIGTERM and must exit 0.
- SIGTERM: --runs times, a fresh runner starts on the same store; once the store shows it
  idle, and after a pause drawn from 0.2 to 2.5 s (so the signal lands anywhere in the
  runner's idle wait), the script sends SIGTERM and times until the process has exited
  (a pidfd wakes the moment it does). Each run must exit 0 and leave the worker offline.

    .venv/bin/python bench/runner_idle.py [--seconds 60] [--runs 10]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from typing import Any

import psutil

from corral.store import open_store
from measure import (
    VENV_BIN,
    Spread,
    Verdicts,
    banner,
    fresh_process_env,
    ms,
    new_store,
    spawned,
    stop_gently,
    table,
    tail,
    temp_dir,
    wait_exit,
    wait_for_worker,
)

CORRAL = os.path.join(VENV_BIN, "corral")
CPU_TARGET = 0.005  # of one core
RSS_TARGET = 40_000_000  # bytes (40 MB)
EXIT_TARGET_S = 1.0
START_TIMEOUT_S = 30.0


def start_runner(folder: str, path: str, name: str, log: Any) -> Any:
    """`corral worker start --exec true` under `name`; the context manager of its process."""
    argv = [CORRAL, "worker", "start", "--name", name, "--exec", "true"]
    env = fresh_process_env(path)
    return spawned(argv, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=log)


def check_stopped(code: int | None, path: str, name: str, log: str) -> None:
    """Raise unless the runner exited 0 on SIGTERM and its worker is offline."""
    with open_store(path) as store:
        status = next(str(w.status) for w in store.workers.list_workers() if w.name == name)
    if code != 0 or status != "offline":
        raise RuntimeError(f"{name} exited {code}, worker {status}:\n{tail(log)}")


def idle_window(folder: str, path: str, seconds: float) -> dict[str, float]:
    """CPU, RSS and wake-ups of an idle runner over `seconds`."""
    log = os.path.join(folder, "idle.log")
    with open(log, "w") as err, start_runner(folder, path, "bench-idle", err) as proc:
        started = time.monotonic()
        wait_for_worker(
            path,
            "bench-idle",
            ("idle",),
            timeout_s=START_TIMEOUT_S,
            alive=lambda: proc.poll() is None,
        )
        me = psutil.Process(proc.pid)
        cpu0, switches0 = me.cpu_times(), me.num_ctx_switches().voluntary
        began = time.monotonic()
        rss = []
        while (left := began + seconds - time.monotonic()) > 0:
            rss.append(me.memory_info().rss)
            time.sleep(min(1.0, left))
        cpu1, switches1 = me.cpu_times(), me.num_ctx_switches().voluntary
        wall = time.monotonic() - began
        rss.append(me.memory_info().rss)
        life_cpu = cpu1.user + cpu1.system
        life_wall = time.monotonic() - started
        threads = me.num_threads()
        code = stop_gently(proc)
        check_stopped(code, path, "bench-idle", log)
    cpu = (cpu1.user + cpu1.system) - (cpu0.user + cpu0.system)
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "life_cpu_s": life_cpu,
        "life_wall_s": life_wall,
        "rss_max": max(rss),
        "rss_last": rss[-1],
        "wakeups": (switches1 - switches0) / wall,
        "threads": threads,
    }


def time_to_exit(folder: str, path: str, run: int, rng: random.Random) -> float:
    """Seconds from SIGTERM to exit of an idle runner."""
    name = f"bench-term-{run}"
    log = os.path.join(folder, f"{name}.log")
    with open(log, "w") as err, start_runner(folder, path, name, err) as proc:
        wait_for_worker(
            path, name, ("idle",), timeout_s=START_TIMEOUT_S, alive=lambda: proc.poll() is None
        )
        time.sleep(rng.uniform(0.2, 2.5))
        began = time.perf_counter()
        proc.send_signal(signal.SIGTERM)
        exited = wait_exit(proc, 30.0)
        elapsed = time.perf_counter() - began
        code = proc.wait() if exited else None
        check_stopped(code, path, name, log)
    return elapsed


def main() -> int:
    """Measure the idle window, then the SIGTERM runs; check the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="the idle window")
    parser.add_argument("--runs", type=int, default=10, help="SIGTERM runs")
    opts = parser.parse_args()
    banner("idle runner: CPU, memory, SIGTERM", __doc__.split("\n\n")[1])
    v = Verdicts("runner_idle")
    with temp_dir("idle") as folder:
        path = os.path.join(folder, "corral.db")
        new_store(path).close()
        idle = idle_window(folder, path, opts.seconds)
        rng = random.Random(3)
        exits = [time_to_exit(folder, path, run, rng) for run in range(opts.runs)]
    share = idle["cpu_s"] / idle["wall_s"]
    life = idle["life_cpu_s"] / idle["life_wall_s"]
    print(f"idle runner, `corral worker start --exec true` on an empty store, {opts.seconds:g} s")
    rows = [
        ["idle window", f"{idle['cpu_s'] * 1000:.0f}", f"{idle['wall_s']:.1f}", f"{share:.3%}"],
        [
            "whole life (start-up too)",
            f"{idle['life_cpu_s'] * 1000:.0f}",
            f"{idle['life_wall_s']:.1f}",
            f"{life:.3%}",
        ],
    ]
    print(table(["phase", "cpu ms", "wall s", "cpu % of a core"], rows))
    print(
        f"RSS max {idle['rss_max'] / 1e6:.1f} MB, at the end {idle['rss_last'] / 1e6:.1f} MB; "
        f"{idle['threads']:.0f} threads, {idle['wakeups']:.1f} wake-ups a second "
        "(voluntary context switches)"
    )
    spread = Spread.of(exits)
    print(f"\nSIGTERM to exit, idle runner, {spread.n} runs (ms)")
    cells = [ms(spread.p50_s), ms(spread.p95_s), ms(spread.max_s), ms(min(exits))]
    print(table(["median", "p95", "max", "min"], [cells]))
    v.check(
        f"idle CPU over {opts.seconds:g} s < 0.5% of a core", f"{share:.3%}", share < CPU_TARGET
    )
    v.check(
        "idle RSS < 40 MB", f"{idle['rss_max'] / 1e6:.1f} MB (max)", idle["rss_max"] < RSS_TARGET
    )
    median = statistics.median(exits)
    v.check("SIGTERM to exit, idle, median < 1 s", f"{ms(median)} ms", median < EXIT_TARGET_S)
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
