"""Enqueue: the time of one `corral.enqueue` on both stores, this tree beside another.

Each sample is a fresh process on a fresh store (a file, or a scratch PostgreSQL
database) that enqueues --tasks tasks one at a time through `corral.enqueue`, each with
a payload and a label (what `corral add` sends), and reports the median and p95 of one
enqueue. With --against SRC (the `src` folder of another checkout, e.g. from `git archive
BASE | tar -x -C /tmp/base`), the same samples run on that tree too, interleaved round
by round so the machine's noise falls on both; the ratio is each tree's median over this
tree's.

    .venv/bin/python bench/enqueue_rate.py [--tasks 500] [--rounds 3] [--against SRC]
                                           [--stores sqlite postgresql]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from measure import Spread, banner, ms, store_url, table, temp_dir

HERE = os.path.dirname(os.path.abspath(__file__))
OWN_SRC = os.path.join(os.path.dirname(HERE), "src")


def sample(dialect: str, tasks: int) -> list[float]:
    """Seconds of each of `tasks` enqueues on a fresh store of `dialect` (in this process)."""
    from corral import NewTask, enqueue, open_store

    times = []
    with temp_dir("enqueue") as folder, store_url(dialect, folder) as url, open_store(url) as s:
        for n in range(tasks):
            spec = NewTask(title=f"bench {n}", payload={"n": n}, labels={"bench": "enqueue"})
            began = time.perf_counter()
            enqueue(s, spec)
            times.append(time.perf_counter() - began)
    return times


def run_sample(src: str, dialect: str, tasks: int) -> list[float]:
    """One sample in a fresh process importing corral from `src`."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([src, HERE])}
    argv = [sys.executable, __file__, "--sample", dialect, "--tasks", str(tasks)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    times: list[float] = json.loads(done.stdout)
    return times


def main() -> int:
    """Measure each tree and store, interleaved; print the spreads and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", help="the src folder of another checkout")
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--sample", help=argparse.SUPPRESS)
    opts = parser.parse_args()
    if opts.sample:
        print(json.dumps(sample(opts.sample, opts.tasks)))
        return 0
    banner("Enqueue: one corral.enqueue", __doc__.split("\n\n")[1])
    trees = {"this tree": OWN_SRC, **({"against": opts.against} if opts.against else {})}
    found: dict[tuple[str, str], list[float]] = {}
    for _ in range(opts.rounds):
        for dialect in opts.stores:
            for name, src in trees.items():
                found.setdefault((name, dialect), []).extend(run_sample(src, dialect, opts.tasks))
    rows = []
    for dialect in opts.stores:
        own = statistics.median(found["this tree", dialect])
        for name in trees:
            spread = Spread.of(found[name, dialect])
            ratio = f"{spread.p50_s / own:.2f}"
            rows.append([dialect, name, spread.n, ms(spread.p50_s), ms(spread.p95_s), ratio])
    print(table(["store", "tree", "enqueues", "median ms", "p95 ms", "median / this tree's"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
