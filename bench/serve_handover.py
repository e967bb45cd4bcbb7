"""Long-poll hand-over through `corral serve`: from a task's enqueue committed to its claim
returned to a remote runner that was waiting for work, on SQLite and on PostgreSQL.

Per store, a fresh `corral serve` (serve_harness.py) and one remote runner, a forked
process calling `corral.run_worker(noop, db=URL, token=WORKER_TOKEN)`: once idle, its
claims long-poll the server. In that process the remote store's `exchange` is wrapped to
note, for each task it returns held, when the call was sent and when it returned
(`time.perf_counter`, the same clock in every process here), and send both back. The
script then --samples times: pauses 50 to 100 ms (so the runner has reported the last task
and waits again), enqueues one task on the store directly (`corral.enqueue`, the commit
done when it returns), and reads the runner's note. The hand-over is claimed minus
committed. A sample whose exchange was sent after the commit (the runner was not waiting
yet) is not a hand-over; it is counted and left out. Targets (issue 17): p50 < 20 ms,
p95 < 50 ms, on each store.

    .venv/bin/python bench/serve_handover.py [--samples 200] [--stores sqlite postgresql]
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import sys
import time
from typing import Any

import corral
from corral.model.tasks import NewTask
from corral.store import open_store
from measure import Spread, Verdicts, banner, ms, table, temp_dir, wait_for_worker
from serve_harness import served

P50_TARGET_S = 0.020
P95_TARGET_S = 0.050
NOTE_TIMEOUT_S = 10.0


def runner(url: str, token: str, notes: Any) -> None:
    """A remote runner whose exchanges note each task they return held (in the child)."""
    import logging

    from corral.store.claims import Claims

    logging.disable(logging.WARNING)  # its start, stop, and the poll its stop cuts
    original = Claims.exchange

    def noted(self: Claims, *args: Any, **kwargs: Any) -> Any:
        sent = time.perf_counter()
        done = original(self, *args, **kwargs)
        returned = time.perf_counter()
        for held in done.held:
            notes.put((held.task.id, sent, returned))
        return done

    Claims.exchange = noted  # type: ignore[method-assign]  # the measuring wrapper
    corral.run_worker(lambda task, ctx: None, db=url, token=token, name="bench-handover")


def measure_store(dialect: str, samples: int, rng: random.Random) -> tuple[list[float], int]:
    """Hand-over seconds of `samples` tasks on a fresh server of `dialect`, and how many
    samples found the runner not yet waiting."""
    ctx = multiprocessing.get_context("fork")
    notes = ctx.Queue()
    with temp_dir(f"handover-{dialect}") as folder, served(dialect, folder) as server:
        child = ctx.Process(target=runner, args=(server.url, server.worker_token, notes))
        child.start()
        try:
            wait_for_worker(
                server.db, "bench-handover", ("idle",), timeout_s=30, alive=child.is_alive
            )
            return _samples(server.db, samples, notes, rng)
        finally:
            child.terminate()
            child.join(timeout=10)
            if child.is_alive():
                child.kill()
                child.join()


def _samples(db: str, samples: int, notes: Any, rng: random.Random) -> tuple[list[float], int]:
    took: list[float] = []
    early = 0
    with open_store(db) as store:
        while len(took) < samples:
            time.sleep(rng.uniform(0.05, 0.10))
            task = corral.enqueue(store, NewTask(title=f"handover {len(took)}")).id
            committed = time.perf_counter()
            task_id, sent, claimed = notes.get(timeout=NOTE_TIMEOUT_S)
            if task_id != task:
                raise RuntimeError(f"the runner claimed {task_id}, not {task}")
            if sent > committed:
                early += 1
                continue
            took.append(claimed - committed)
    return took, early


def main() -> int:
    """Measure each store, print the spreads, check the targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200, help="hand-overs per store")
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    opts = parser.parse_args()
    banner("long-poll hand-over through corral serve", __doc__.split("\n\n")[1])
    v = Verdicts("serve_handover")
    rows = []
    rng = random.Random(17)
    for dialect in opts.stores:
        took, early = measure_store(dialect, opts.samples, rng)
        spread = Spread.of(took)
        cells = [ms(spread.p50_s), ms(spread.p95_s), ms(spread.p99_s), ms(spread.max_s)]
        rows.append([dialect, spread.n, *cells, early])
        v.check(f"{dialect}: p50 < 20 ms", f"{ms(spread.p50_s)} ms", spread.p50_s < P50_TARGET_S)
        v.check(f"{dialect}: p95 < 50 ms", f"{ms(spread.p95_s)} ms", spread.p95_s < P95_TARGET_S)
    print("enqueue committed -> claim returned to the waiting remote runner (ms)")
    headers = ["store", "n", "p50", "p95", "p99", "max", "not waiting (left out)"]
    print(table(headers, rows))
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
