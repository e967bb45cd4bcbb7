"""An every-second schedule under real processes racing to fire it: each second once.

The leading orchestrator fires every scheduler interval (1 s here) while `corral reconcile`
runs in tight shell loops beside it, each making a scheduler pass of its own. On
PostgreSQL two orchestrators run (one leads, one stands by) and the leader is killed
halfway: the standby takes over and catches up. Nothing but the store's fire key and the
compare-and-set on each schedule's next time keeps the fires once.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from corral import EventFilter
from corral.model.orchestrators import OrchestratorStatus
from corral.model.schedules import FireOutcome, NewSchedule, Overlap
from corral.usecases.schedules import add_schedule

RUN_S = 12.0  # long enough for a dozen passes of each process and a takeover
ENV = {"CORRAL_SCHEDULER_INTERVAL_S": "1"}


def _reconcile_loop(pool: Any) -> subprocess.Popen[bytes]:
    """`while :; do corral reconcile; done` in the pool's folder, as an operator's cron would."""
    return subprocess.Popen(
        ["sh", "-c", "while :; do python -m corral.cli.main reconcile >/dev/null || exit 1; done"],
        cwd=pool.folder,
        env=pool.env,
        start_new_session=True,
    )


def _wait_fired(pool: Any, until: datetime) -> None:
    """Until the schedule has fired at `until` (the race runs on real time)."""

    def fired() -> bool:
        last = pool.store.schedules.get_schedule("tick").last_fire_at
        return last is not None and last >= until

    pool.wait(fired, timeout_s=RUN_S * 3)


def _stop(loop: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(loop.pid, signal.SIGKILL)
    loop.wait(10)


def _race(pool: Any, *, orchestrators: int, loops: int, kill_leader: bool) -> None:
    pool.env.update(ENV)
    running = OrchestratorStatus.RUNNING
    added = add_schedule(
        pool.store,
        NewSchedule(
            id="tick", cron="* * * * * *", template={"title": "tick"}, overlap=Overlap.ALLOW
        ),
    )
    started = []
    for n in range(orchestrators):
        host = pool.folder / f"host-{n}"
        host.mkdir()
        started.append(pool.start("--hostname", f"host-{n}", workers=1, cwd=host))
        if n == 0:
            pool.wait(lambda: pool.store.orchestrators.get_orchestrator().status is running)
    racers = [_reconcile_loop(pool) for _ in range(loops)]
    try:
        _wait_fired(pool, added.next_fire_at + timedelta(seconds=RUN_S / 2))
        if kill_leader:
            os.kill(started[0].pid, signal.SIGKILL)
            started[0].wait(10)
            pool.wait(lambda: "host-1" == pool.store.orchestrators.get_orchestrator().host)
        _wait_fired(pool, added.next_fire_at + timedelta(seconds=RUN_S))
    finally:
        for loop in racers:
            _stop(loop)
    for proc in started[1 if kill_leader else 0 :]:
        proc.send_signal(signal.SIGTERM)
        assert 0 == proc.wait(30)
    _assert_each_second_once(pool, first=added.next_fire_at)


def _assert_each_second_once(pool: Any, *, first: Any) -> None:
    """Every second from the first fire to the last handled has one fire and one task."""
    store = pool.store
    last = store.schedules.get_schedule("tick").last_fire_at
    fires = store.schedules.schedule_fires("tick", 100_000)
    assert {FireOutcome.CREATED} == {f.outcome for f in fires}
    seconds = int((last - first).total_seconds()) + 1
    assert seconds >= RUN_S - 2, (first, last)
    assert [first + timedelta(seconds=s) for s in range(seconds)] == sorted(
        f.fire_at for f in fires
    )
    created = store.events.list_events(EventFilter(names=("task.created",), limit=100_000))
    per_fire = Counter(e.data["fire_at"] for e in created if e.data)
    assert {1} == set(per_fire.values())
    assert seconds == len(per_fire)
    by_actor = Counter(e.actor for e in created)
    print("fires by actor:", dict(by_actor))
    assert by_actor["reconcile"] > 0  # the loops did race the orchestrator


def test_each_second_fires_once_with_an_orchestrator_and_reconcile_loops_on_sqlite(pool):  # type: ignore[no-untyped-def]
    """SQLite's one orchestrator and two `reconcile` loops, 12 s of every-second fires."""
    _race(pool, orchestrators=1, loops=2, kill_leader=False)


def test_each_second_fires_once_across_two_orchestrators_a_takeover_and_reconcile_on_pg(
    pg_pool,
):  # type: ignore[no-untyped-def]
    """Two orchestrators and a `reconcile` loop on PostgreSQL; the leader is SIGKILLed
    halfway and the standby takes over: still every second once."""
    _race(pg_pool, orchestrators=2, loops=1, kill_leader=True)
