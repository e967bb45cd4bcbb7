"""Heartbeat cost: in-process latency, and the CPU of a worker heartbeating every second.

- In-process: corral.usecases.workers.heartbeat, back to back, for a worker holding one active
  claim (so each beat also extends a lease), on a store with 1,000 ready tasks.
- CPU: a child process (this script with --child) opens the store, then heartbeats every
  second; it reports the user+sys CPU time (resource.getrusage) of its beating phase,
  and the parent reads the child's whole-life CPU (start-up included) from RUSAGE_CHILDREN.

    .venv/bin/python bench/heartbeat.py [--beats 1000] [--cpu-seconds 20]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

from corral.store import open_store
from corral.usecases import claims, workers
from measure import (
    Spread,
    Verdicts,
    banner,
    bulk_load,
    dump,
    ms,
    new_store,
    register_worker,
    table,
    temp_dir,
)

P95_TARGET_S = 0.005
CPU_TARGET = 0.005  # of one core


def in_process(path: str, worker: str, beats: int) -> Spread:
    """The spread of `beats` back-to-back heartbeats."""
    with open_store(path) as store:
        claims.claim_next(store, worker)
        times = []
        for _ in range(beats):
            t0 = time.perf_counter()
            workers.heartbeat(store, worker)
            times.append(time.perf_counter() - t0)
    return Spread.of(times)


def child(path: str, worker: str, seconds: int) -> None:
    """Heartbeat once a second for `seconds`; print the CPU and wall time of that phase."""
    store = open_store(path)
    before = resource.getrusage(resource.RUSAGE_SELF)
    began = time.monotonic()
    for beat in range(seconds):
        workers.heartbeat(store, worker)
        time.sleep(max(0.0, began + beat + 1 - time.monotonic()))
    after = resource.getrusage(resource.RUSAGE_SELF)
    wall_s = time.monotonic() - began
    store.close()
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(dump({"cpu_s": cpu_s, "wall_s": wall_s, "beats": seconds}))


def cpu_of_child(path: str, worker: str, seconds: int) -> tuple[dict[str, float], float, float]:
    """Run the heartbeating child; its report, its whole-life CPU s and wall s."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    argv = [sys.executable, os.path.abspath(__file__), "--child", path, worker, str(seconds)]
    t0 = time.monotonic()
    with subprocess.Popen(argv, stdout=subprocess.PIPE, text=True) as proc:
        try:
            out, _ = proc.communicate(timeout=seconds + 60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    wall_s = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"the heartbeating child exited {proc.returncode}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    life_cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(out), life_cpu_s, wall_s


def main() -> int:
    """Measure both, print them, check the targets."""
    if len(sys.argv) == 5 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--beats", type=int, default=1000, help="in-process heartbeats")
    parser.add_argument("--cpu-seconds", type=int, default=20, help="life of the CPU child")
    opts = parser.parse_args()
    banner("heartbeat", __doc__.split("\n\n")[1])
    v = Verdicts("heartbeat")
    with temp_dir("heartbeat") as folder:
        path = os.path.join(folder, "corral.db")
        with new_store(path) as store:
            workers = [register_worker(store, name) for name in ("in-process", "cpu-child")]
        bulk_load(path, 1_000)
        beat = in_process(path, workers[0], opts.beats)
        print(f"in-process heartbeat, {beat.n} back to back (ms)")
        cells = [ms(beat.p50_s), ms(beat.p95_s), ms(beat.p99_s), ms(beat.max_s)]
        ratio = f"{beat.p95_s / P95_TARGET_S:.2f}"
        print(table(["p50", "p95", "p99", "max", "p95 / target"], [[*cells, ratio]]))
        v.check(
            "in-process heartbeat p95 < 5 ms", f"{ms(beat.p95_s)} ms", beat.p95_s < P95_TARGET_S
        )

        report, life_cpu_s, life_wall_s = cpu_of_child(path, workers[1], opts.cpu_seconds)
    steady = report["cpu_s"] / report["wall_s"]
    life = life_cpu_s / life_wall_s
    print(f"\nworker process heartbeating every 1 s for {report['beats']} s (% of one core)")
    rows: list[tuple[str, float, float, float]] = [
        ("beating (after open)", report["cpu_s"], report["wall_s"], steady),
        ("whole life (start-up too)", life_cpu_s, life_wall_s, life),
    ]
    cpu_rows = [[n, f"{cpu * 1000:.1f}", f"{wall:.1f}", f"{pct:.3%}"] for n, cpu, wall, pct in rows]
    print(table(["phase", "cpu ms", "wall s", "cpu % of a core"], cpu_rows))
    v.check("heartbeat every 1 s: CPU < 0.5% of one core", f"{steady:.3%}", steady < CPU_TARGET)
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
