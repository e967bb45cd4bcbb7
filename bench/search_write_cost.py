"""What the text index of the task search (schema version 19) costs the writes: adding
tasks, and claiming and completing them, with the index beside the same without it.

For each store two fresh stores are made; the floor has the index taken out (SQLite: the
FTS5 table task_text and its three triggers; PostgreSQL: the table task_text, its
trigger and its GIN index). In each of --rounds rounds, on each store in turn: --tasks tasks are
added through `corral.usecases.tasks.enqueue` (a title, a 300-character description and a payload
of a dozen fields: what an agent's task carries), then one worker claims and completes
them all (`claims.claim_next`, `claims.complete`), one process. Figures are medians over
the rounds, in operations per second; the ratio is with the index over without (1.00: it
costs nothing). Concurrent claims are bench/claim_cycle.py's and pg_claim_cycle.py's.

    .venv/bin/python bench/search_write_cost.py [--tasks 500] [--rounds 5]
                                                [--stores sqlite postgresql]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import time

import psycopg

import measure
from corral import open_store
from corral.model.tasks import NewTask
from corral.store import Store
from corral.usecases import claims
from corral.usecases.tasks import enqueue

ADD_RATIO = 1.25  # the index may cost an add a quarter of its time at most
CLAIM_RATIO = 1.10  # and a claim + complete a tenth
DESCRIPTION = ("Refactor the request handler so that retries back off; " * 6)[:300]


def _drop_index(url: str) -> None:
    """The floor: the store as it was before version 19's search index."""
    if "://" not in url:
        lite = sqlite3.connect(url, isolation_level=None)
        for trigger in ("task_text_added", "task_text_removed", "task_text_changed"):
            lite.execute(f"DROP TRIGGER {trigger}")
        lite.execute("DROP TABLE task_text")
        lite.close()
        return
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(b"DROP TRIGGER task_text_kept ON tasks")
        conn.execute(b"DROP TABLE task_text")


def _round(store: Store, worker_id: str, tasks: int, offset: int) -> tuple[float, float]:
    """(adds per second, claim + complete cycles per second) of one round."""
    began = time.perf_counter()
    for n in range(offset, offset + tasks):
        payload = {f"field_{k}": f"value {n}-{k} of the ticket" for k in range(12)}
        enqueue(
            store, NewTask(title=f"Fix flaky test {n}", description=DESCRIPTION, payload=payload)
        )
    added = time.perf_counter()
    while (claim := claims.claim_next(store, worker_id)) is not None:
        claims.complete(store, claim.task_id, token=claim.token)
    done = time.perf_counter()
    return tasks / (added - began), tasks / (done - added)


def _measure(dialect: str, folder: str, tasks: int, rounds: int) -> dict[str, list[float]]:
    found: dict[str, list[float]] = {k: [] for k in ("add", "add floor", "cycle", "cycle floor")}
    with (
        measure.store_url(dialect, os.path.join(folder, "index")) as with_index,
        measure.store_url(dialect, os.path.join(folder, "floor")) as floor,
    ):
        stores = {}
        for name, url in (("", with_index), (" floor", floor)):
            store = open_store(url)
            store.migrate()
            if name:
                _drop_index(url)
            stores[name] = (store, measure.register_worker(store, f"bench{name.strip()}"))
        for r in range(rounds):
            for name, (store, worker_id) in stores.items():
                adds, cycles = _round(store, worker_id, tasks, r * tasks)
                found["add" + name].append(adds)
                found["cycle" + name].append(cycles)
        for store, _ in stores.values():
            store.close()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    args = parser.parse_args()
    measure.banner("search index write cost", f"{args.tasks} tasks a round, {args.rounds} rounds")
    verdicts = measure.Verdicts("search index write cost")
    rows = []
    for dialect in args.stores:
        with measure.temp_dir("search-write") as folder:
            for part in ("index", "floor"):
                os.makedirs(os.path.join(folder, part))
            found = _measure(dialect, folder, args.tasks, args.rounds)
        median = {k: statistics.median(v) for k, v in found.items()}
        for what, limit in (("add", ADD_RATIO), ("cycle", CLAIM_RATIO)):
            ratio = median[f"{what} floor"] / median[what]  # time with / time without
            rows.append(
                [
                    f"{dialect}, {what}",
                    f"{median[what]:.0f}",
                    f"{median[what + ' floor']:.0f}",
                    f"{ratio:.2f}",
                ]
            )
            verdicts.check(
                f"{dialect}, {what}: time ratio < {limit}", f"{ratio:.2f}", ratio < limit
            )
    print(measure.table(["per second", "with index", "without", "time ratio"], rows))
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
