"""`corral ready --json` against `corral serve` beside the same command on the local store.

A SQLite store bulk-loaded with 1,000 ready tasks (the command prints the first 100),
served by a fresh `corral serve` (serve_harness.py). Each round runs two fresh processes,
one after the other, in an order that alternates: `corral ready --json` with `CORRAL_DB`
the store's file (local), and with `CORRAL_DB` the server's URL and `CORRAL_TOKEN` its
worker token (remote). Wall time around `subprocess.run` (fork, exec, the command, exit),
as bench/cli_latency.py times commands; three untimed warm-up rounds come first. Both must
print the same tasks. Target (issue 17): the remote command's median ≤ 1.5x the local
one's.

    .venv/bin/python bench/serve_startup.py [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

from cli_latency import CORRAL, timed
from measure import Spread, Verdicts, banner, bulk_load, fresh_process_env, ms, table, temp_dir
from serve_harness import served

READY_TASKS = 1_000
RATIO_TARGET = 1.5
WARM_UP_ROUNDS = 3


def main() -> int:
    """Time both commands --runs times, interleaved; print the spreads; check the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="timed rounds")
    opts = parser.parse_args()
    banner("corral ready --json: remote vs local", __doc__.split("\n\n")[1])
    argv = [CORRAL, "ready", "--json"]
    took: dict[str, list[float]] = {"local": [], "remote": []}
    with temp_dir("serve-startup") as folder, served("sqlite", folder) as server:
        bulk_load(server.db, READY_TASKS)
        envs = {"local": fresh_process_env(server.db), "remote": server.env("worker")}
        for n in range(WARM_UP_ROUNDS + opts.runs):
            order = ("local", "remote") if n % 2 else ("remote", "local")
            outputs = {}
            for where in order:
                seconds, outputs[where] = timed(argv, envs[where], folder)
                if n >= WARM_UP_ROUNDS:
                    took[where].append(seconds)
            if json.loads(outputs["local"]) != json.loads(outputs["remote"]):
                raise RuntimeError("the remote command printed other tasks than the local one")
    rows = []
    for where, values in took.items():
        spread = Spread.of(values)
        rows.append([where, spread.n, ms(spread.p50_s), ms(spread.p95_s), ms(min(values))])
    print(f"`corral ready --json`, {READY_TASKS} ready tasks, fresh processes (ms)")
    print(table(["store", "n", "median", "p95", "min"], rows))
    ratio = statistics.median(took["remote"]) / statistics.median(took["local"])
    v = Verdicts("serve_startup")
    v.check("remote median ≤ 1.5x local", f"{ratio:.2f}x", ratio <= RATIO_TARGET)
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
