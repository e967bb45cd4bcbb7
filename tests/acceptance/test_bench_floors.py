"""The benchmarks' raw floors write what corral writes.

`bench/claim_cycle.py` and `bench/pg_claim_cycle.py` compare corral's claim + complete
with a "raw" loop of the store's own SQL on a bare connection. The floor is only a floor
if it is the same work: here one task goes through corral and one through the floor, and
both must leave the same task, claim and events behind. A statement renamed or added in
the exchange (store/exchange.py, functions.sql) breaks this test, not a measurement.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from corral import EventFilter, NewTask, Store, open_store
from corral.usecases import claims, tasks

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import claim_cycle  # noqa: E402 - a benchmark script, found beside this repository's tests
import measure  # noqa: E402

# What may differ between two tasks done alike: their ids, times, tokens and actors.
_SAME = ("name", "from_status", "to_status")


def _trail(store: Store, task_id: str) -> tuple[Any, ...]:
    """What a claim + complete left of `task_id`: its state, and its events' kinds."""
    task = store.tasks.get_task(task_id)
    events = store.events.list_events(EventFilter(task_id=task_id))
    return (
        task.status,
        task.attempts,
        task.token,
        [tuple(getattr(e, field) for field in _SAME) for e in events],
        [sorted((e.data or {}).keys()) for e in events],
    )


def test_the_sqlite_floor_claims_and_completes_as_the_exchange_does(tmp_path: Path) -> None:
    """claim_cycle's RawCycle leaves a task as claims.claim_next + claims.complete do."""
    path = str(tmp_path / "corral.db")
    with measure.new_store(path) as store:
        worker = measure.register_worker(store, "bench")
        first = tasks.enqueue(store, NewTask(title="through corral")).id
        second = tasks.enqueue(store, NewTask(title="through the floor")).id
        claim = claims.claim_next(store, worker)
        assert claim is not None
        assert first == claim.task_id
        claims.complete(store, first, token=claim.token)
        raw = claim_cycle.RawCycle(path, worker, flock=False)
        try:
            task_id, token = raw.claim()
            assert second == task_id
            raw.complete(task_id, token)
        finally:
            raw.conn.close()
        assert _trail(store, first) == _trail(store, second)
        assert 2 == store.workers.get_worker(worker).completed_total


def test_the_postgresql_floor_calls_the_exchange_as_the_driver_does(pg_url: str) -> None:
    """pg_claim_cycle's RawCycle leaves a task as claims.claim_next + claims.complete do."""
    psycopg = pytest.importorskip("psycopg")
    import pg_claim_cycle  # it imports psycopg, which only this test needs

    with open_store(pg_url) as store:
        worker = measure.register_worker(store, "bench")
        first = tasks.enqueue(store, NewTask(title="through corral")).id
        second = tasks.enqueue(store, NewTask(title="through the floor")).id
        claim = claims.claim_next(store, worker)
        assert claim is not None
        claims.complete(store, first, token=claim.token)
        raw = pg_claim_cycle.RawCycle(pg_url, worker)
        try:
            # The floor sets the session's time zone; the test's schema is in its URL.
            schema = psycopg.conninfo.conninfo_to_dict(pg_url)["options"].split("=")[1]
            raw.conn.execute(f"SET search_path TO {schema}")
            held = raw.claim()
            assert held is not None
            assert second == held[0]
            raw.complete(*held)
        finally:
            raw.conn.close()
        assert _trail(store, first) == _trail(store, second)
