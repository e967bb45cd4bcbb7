"""Schedules: the cost of one scheduler pass, and the latency of a fire, on both stores.

Pass (in-process, the store on an injected clock so that exactly the wanted schedules are
due): each sample moves the clock one minute and times `corral.usecases.schedules.fire_due`, which
finds the due schedules, plans them and makes one fire and one task for each. Three
stores in a row, each the last plus more:

- floor: 100 schedules, every one due each minute (`0 * * * * *`, overlap allow);
- idle: 9,900 more that are not due (yearly), 10,000 in all;
- history: 1,000,000 past fires in the fire table, on the due schedules.

Latency (real processes): an orchestrator (`corral orchestrator start`, its scheduler
interval --interval-s) fires an every-second schedule for --seconds; each fire's latency
is from its scheduled second to its task's creation, when it is `ready` (the fire record
and the task share one transaction and its clock).

    .venv/bin/python bench/schedule_pass.py [--samples 30] [--seconds 20] [--interval-s 1]
                                            [--stores sqlite postgresql] [--skip-latency]
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime

import psycopg

from corral import FakeClock, Settings, open_store
from corral.model.schedules import NewSchedule, Overlap
from corral.store import Store
from corral.usecases.schedules import add_schedule, fire_due
from measure import (
    VENV_BIN,
    Spread,
    Verdicts,
    banner,
    fresh_process_env,
    ms,
    spawned,
    stop_gently,
    store_url,
    table,
    temp_dir,
)

DUE, IDLE, PAST_FIRES = 100, 9_900, 1_000_000
PASS_TARGET_S = 0.050
HISTORY_RATIO = 1.2
LATENCY_MARGIN_S = 0.100
START = datetime(2030, 6, 1, 0, 0, 30, tzinfo=UTC)
SETTINGS = Settings()

COPY_SQLITE = """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count)
INSERT INTO schedules (id, cron, timezone, template, overlap, max_catchup, catchup_window_s,
                       paused, next_fire_at, created_at, updated_at)
SELECT :prefix || i, s.cron, s.timezone, s.template, s.overlap, s.max_catchup,
       s.catchup_window_s, s.paused, s.next_fire_at, s.created_at, s.updated_at
FROM n, schedules s WHERE s.id = :model
"""
COPY_POSTGRESQL = """
INSERT INTO schedules (id, cron, timezone, template, overlap, max_catchup, catchup_window_s,
                       paused, next_fire_at, created_at, updated_at)
SELECT %(prefix)s || i, s.cron, s.timezone, s.template, s.overlap, s.max_catchup,
       s.catchup_window_s, s.paused, s.next_fire_at, s.created_at, s.updated_at
FROM generate_series(1, %(count)s) i, schedules s WHERE s.id = %(model)s
"""
FIRES_SQLITE = """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count)
INSERT INTO schedule_fires (key, schedule_id, fire_at, outcome, task_id, note, recorded_at)
SELECT 'schedule:due-' || (i % 100) || ':'
           || strftime('%Y-%m-%dT%H:%M:%SZ', :before - i * 60, 'unixepoch'),
       'due-' || (i % 100), :before - i * 60,
       'created', 't-past' || i, NULL, :before - i * 60
FROM n
"""
FIRES_POSTGRESQL = """
INSERT INTO schedule_fires (key, schedule_id, fire_at, outcome, task_id, note, recorded_at)
SELECT 'schedule:due-' || (i %% 100) || ':'
           || to_char((%(before)s - i * interval '1 minute') AT TIME ZONE 'UTC',
                      'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
       'due-' || (i %% 100),
       %(before)s - i * interval '1 minute', 'created', 't-past' || i, NULL,
       %(before)s - i * interval '1 minute'
FROM generate_series(1, %(count)s) i
"""


def _bulk(url: str, sqlite_sql: str, pg_sql: str, **params: object) -> None:
    """Run one bulk INSERT by SQL (a fresh copy of what corral wrote for the model row)."""
    if url.startswith("postgresql"):
        with psycopg.connect(url, autocommit=True) as pg:
            pg.execute(pg_sql, params)
            pg.execute("ANALYZE")
        return
    before = params.get("before")
    if isinstance(before, datetime):
        params["before"] = before.timestamp()
    conn = sqlite3.connect(url)
    try:
        with conn:
            conn.execute(sqlite_sql, params)
        conn.execute("ANALYZE")
        # A store's history is written over months and checkpointed as it goes: a bulk
        # load's write-ahead log of a gigabyte is not, and every read would consult it.
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


def _add(store: Store, schedule_id: str, cron: str) -> None:
    spec = NewSchedule(
        id=schedule_id, cron=cron, template={"title": "bench"}, overlap=Overlap.ALLOW
    )
    add_schedule(store, spec)


def _passes(store: Store, clock: FakeClock, samples: int) -> Spread:
    """Time `samples` passes, each with the due schedules due once (a minute later)."""
    times = []
    for n in range(samples + 3):  # the first three warm caches up
        clock.advance(60)
        t0 = time.perf_counter()
        report = fire_due(store, settings=SETTINGS)
        elapsed = time.perf_counter() - t0
        assert report.created == DUE, report
        if n >= 3:
            times.append(elapsed)
    return Spread.of(times)


def pass_cost(dialect: str, samples: int) -> dict[str, Spread]:
    """The pass's spread on the floor, idle and history stores of `dialect`."""
    found = {}
    with temp_dir("schedules") as folder, store_url(dialect, folder) as url:
        clock = FakeClock(START)
        store = open_store(url, clock=clock)
        try:
            _add(store, "due-0", "0 * * * * *")
            _bulk(url, COPY_SQLITE, COPY_POSTGRESQL, prefix="due-", count=DUE - 1, model="due-0")
            found["floor"] = _passes(store, clock, samples)
            _add(store, "idle-0", "0 0 0 1 1 *")
            _bulk(url, COPY_SQLITE, COPY_POSTGRESQL, prefix="idle-", count=IDLE - 1, model="idle-0")
            found["idle"] = _passes(store, clock, samples)
            t0 = time.monotonic()
            _bulk(url, FIRES_SQLITE, FIRES_POSTGRESQL, count=PAST_FIRES, before=START)
            print(f"{dialect}: {PAST_FIRES:,} past fires loaded in {time.monotonic() - t0:.1f} s")
            found["history"] = _passes(store, clock, samples)
        finally:
            store.close()
    return found


def latency(dialect: str, seconds: float, interval_s: float) -> Spread:
    """Fire latencies of an every-second schedule under a real orchestrator."""
    with temp_dir("schedule-latency") as folder, store_url(dialect, folder) as url:
        with open_store(url) as store:
            _add(store, "tick", "* * * * * *")
        env = fresh_process_env(url) | {"CORRAL_SCHEDULER_INTERVAL_S": str(interval_s)}
        argv = [os.path.join(VENV_BIN, "corral"), "orchestrator", "start", "--workers", "1"]
        argv += ["--exec", "true", "--kind", "none-of-these"]  # its worker leaves them ready
        log = open(os.path.join(folder, "orchestrator.log"), "wb")  # noqa: SIM115 - closed below
        with log, spawned(argv, env=env, cwd=folder, stdout=log, stderr=subprocess.STDOUT) as proc:
            time.sleep(seconds)
            stop_gently(proc)
        with open_store(url) as store:
            fires = store.schedules.schedule_fires("tick", 100_000)
    # The first pass catches up the seconds the orchestrator took to start: not latency.
    started = min(f.recorded_at for f in fires)
    steady = [f for f in fires if f.recorded_at > started]
    return Spread.of([(f.recorded_at - f.fire_at).total_seconds() for f in steady])


def main() -> int:
    """Measure, print the tables and the verdicts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--interval-s", type=float, default=1.0)
    parser.add_argument("--stores", nargs="+", default=["sqlite", "postgresql"])
    parser.add_argument("--skip-latency", action="store_true")
    args = parser.parse_args()
    banner("scheduler pass and fire latency", __doc__.split("\n\n")[1].replace("\n", " "))
    verdicts = Verdicts("schedule_pass")
    rows = []
    for dialect in args.stores:
        found = pass_cost(dialect, args.samples)
        floor, idle, history = found["floor"], found["idle"], found["history"]
        for name, spread in found.items():
            rows.append((dialect, name, ms(spread.p50_s), ms(spread.p95_s), ms(spread.max_s)))
        verdicts.check(
            f"{dialect}: pass, 10,000 schedules, 100 due, p95 < 50 ms",
            f"{ms(idle.p95_s)} ms",
            idle.p95_s < PASS_TARGET_S,
        )
        ratio = history.p50_s / idle.p50_s
        verdicts.check(
            f"{dialect}: the same with 1,000,000 past fires, p50 within {HISTORY_RATIO}x",
            f"{ratio:.2f}x ({ms(history.p50_s)} / {ms(idle.p50_s)} ms; floor {ms(floor.p50_s)} ms)",
            ratio <= HISTORY_RATIO,
        )
    print(table(["store", "schedules", "p50 ms", "p95 ms", "max ms"], rows))
    if not args.skip_latency:
        lat_rows = []
        for dialect in args.stores:
            spread = latency(dialect, args.seconds, args.interval_s)
            lat_rows.append(
                (dialect, spread.n, ms(spread.p50_s), ms(spread.p95_s), ms(spread.max_s))
            )
            bound = args.interval_s + LATENCY_MARGIN_S
            verdicts.check(
                f"{dialect}: fire latency p95 < interval + 100 ms ({bound:g} s)",
                f"{ms(spread.p95_s)} ms (n={spread.n})",
                spread.p95_s < bound,
            )
        print("\nfire latency, scheduled second to task ready")
        print(table(["store", "fires", "p50 ms", "p95 ms", "max ms"], lat_rows))
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
