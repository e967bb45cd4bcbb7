"""What the agent metrics cost a runner's heartbeat: the CPU time of one sample of a task's
process tree (runtime/worker/tree_metrics.py) for a tree of 1 process and of 20, on the
Linux /proc path and on the portable (psutil) one, beside the floor measured in the same
run: one bare heartbeat write (corral.usecases.workers.heartbeat with no figures) on a SQLite store.

    .venv/bin/python bench/tree_metrics.py [--samples 2000]

CPU time is this process's user+sys (time.process_time), over `--samples` back-to-back
samples, per sample; the verdict is that cost as a share of one core at one sample per
heartbeat at the default interval. The trees are real processes: `sleep` (1), and a bash with 19
`sleep` children (20).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from collections.abc import Callable

from corral import Settings
from corral.foundation.clock import SystemClock
from corral.runtime.worker import proctree
from corral.runtime.worker.tree_metrics import TreeSampler
from corral.usecases import workers
from measure import Verdicts, banner, new_store, register_worker, table, temp_dir

# Seed 000 allows a heartbeat 1% of a core; the agent metrics may take a tenth of that,
# sampled once per beat at the default interval.
SHARE_TARGET = 0.001
INTERVAL_S = Settings().heartbeat_interval_s
TREES = {1: ["sleep", "600"], 20: ["bash", "-c", "for i in $(seq 19); do sleep 600 & done; wait"]}


def cpu_per_call(call: Callable[[], object], count: int) -> float:
    """This process's CPU seconds per call of `call`, over `count` calls."""
    call()  # warm: imports, first reads
    began = time.process_time()
    for _ in range(count):
        call()
    return (time.process_time() - began) / count


def tree_cost(root: int, size: int, samples: int, *, fast: bool) -> float:
    """CPU seconds per sample of the tree under `root` (waited for until it has `size`),
    on the /proc path if `fast`, else on psutil's."""
    proctree._state["on"] = fast
    sampler = TreeSampler(SystemClock())
    deadline = time.monotonic() + 10
    while (figures := sampler.sample([root])) is None or figures.processes < size:
        if time.monotonic() > deadline:
            raise SystemExit(f"the tree of {size} never formed")
        time.sleep(0.01)
    return cpu_per_call(lambda: sampler.sample([root]), samples)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=2000)
    args = parser.parse_args()
    banner("Agent metrics on the heartbeat", "CPU per tree sample vs a bare heartbeat write")
    fast = proctree.available()
    with temp_dir("corral-tree-metrics") as folder:
        store = new_store(f"{folder}/corral.db")
        worker = register_worker(store, "w")
        floor = cpu_per_call(lambda: workers.heartbeat(store, worker), args.samples)
        store.close()
    rows, costs = [["bare heartbeat write (floor)", f"{floor * 1e6:.0f}", "1.00"]], {}
    for size, argv in TREES.items():
        tree = subprocess.Popen(argv, start_new_session=True)
        try:
            for path in ("/proc", "psutil") if fast else ("psutil",):
                cost = tree_cost(tree.pid, size, args.samples, fast=path == "/proc")
                costs[(size, path)] = cost
                name = f"tree of {size:>2} ({path})"
                rows.append([name, f"{cost * 1e6:.0f}", f"{cost / floor:.2f}"])
        finally:
            os.killpg(tree.pid, signal.SIGKILL)  # the tree's own group (a new session)
            tree.wait()
    print(table(["what", "CPU µs per call", "ratio to floor"], rows))
    verdicts = Verdicts("agent metrics")
    for (size, path), cost in costs.items():
        verdicts.check(
            f"tree of {size} ({path}): <= {SHARE_TARGET:.1%} of a core at one sample per"
            f" {INTERVAL_S:g} s beat",
            f"{cost / INTERVAL_S:.4%}",
            cost / INTERVAL_S <= SHARE_TARGET,
        )
    return verdicts.finish()


if __name__ == "__main__":
    raise SystemExit(main())
