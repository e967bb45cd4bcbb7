"""The heartbeat thread: keeps beating through store outages, relays drain, notices lost claims."""

from __future__ import annotations

import logging
import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from corral import FakeClock, Settings
from corral.foundation.errors import StoreError, WorkerUnavailable
from corral.model.states import WorkerStatus
from corral.model.workers import Worker
from corral.runtime.worker.heartbeat import Heartbeat, retry_wait_s

NOW = datetime(2030, 1, 1, tzinfo=UTC)


def _worker(status: WorkerStatus = WorkerStatus.IDLE) -> Worker:
    return Worker(
        id="w-1",
        name="w",
        hostname="h",
        pid=1,
        version="",
        queues=(),
        kinds=(),
        max_concurrent=1,
        labels={},
        status=status,
        registered_at=NOW,
        last_heartbeat_at=NOW,
        active=0,
        completed_total=0,
        failed_total=0,
        offline_reason=None,
        cpu_percent=None,
        rss_bytes=None,
    )


class FlakyStore:
    """A store whose heartbeats fail as scripted: StoreError, WorkerUnavailable, or a status;
    its own `workers` and `claims` repositories, as far as a heartbeat reads them."""

    def __init__(self, script: list[Any]) -> None:
        self.script = script
        self.beats = 0
        self.active: dict[str, Any] = {}  # the active claim of each task
        self.done = threading.Event()
        self.workers = self.claims = self

    def heartbeat(self, worker_id: str, **_: object) -> Worker:
        self.beats += 1
        step = self.script.pop(0) if self.script else WorkerStatus.IDLE
        if not self.script:
            self.done.set()
        if isinstance(step, Exception):
            raise step
        return _worker(step)

    def active_claim(self, task_id: str) -> Any:
        return self.active.get(task_id)


def _beat(store: FlakyStore) -> Heartbeat:
    return Heartbeat(
        store,  # type: ignore[arg-type]
        "w-1",
        settings=Settings(heartbeat_interval_s=1.0),
        clock=FakeClock(),
        log=logging.getLogger("test.heartbeat"),
    )


def test_store_outages_are_retried_and_never_stop_the_beats() -> None:
    """Two failed beats are followed by more attempts; the worker is neither dead nor stopped."""
    store = FlakyStore(
        [WorkerStatus.IDLE, StoreError("locked"), StoreError("locked"), WorkerStatus.IDLE]
    )
    beat = _beat(store)
    beat.start()
    assert store.done.wait(5)
    beat.stop()
    assert store.beats >= 4
    assert not beat.dead.is_set()


def test_a_drain_answer_sets_the_drain_flag() -> None:
    """When the store answers draining, the runner is told to stop claiming."""
    store = FlakyStore([WorkerStatus.IDLE, WorkerStatus.DRAINING])
    beat = _beat(store)
    beat.start()
    assert store.done.wait(5)
    beat.stop()
    assert beat.drain.is_set()


def test_a_worker_declared_dead_stops_beating_and_every_claim_counts_as_lost() -> None:
    """WorkerUnavailable from the store ends the beats and makes every held task lost."""
    store = FlakyStore([WorkerStatus.IDLE, WorkerUnavailable("dead")])
    beat = _beat(store)
    beat.hold("t-1", 7)
    beat.start()
    assert store.done.wait(5)
    beat.stop()
    assert (True, True) == (beat.dead.is_set(), beat.lost("t-1"))


def test_a_claim_that_is_no_longer_active_under_its_token_is_reported_lost() -> None:
    """After a beat, a held task whose active claim is gone (cancelled, re-claimed) is lost."""
    store = FlakyStore([WorkerStatus.BUSY])
    beat = _beat(store)
    beat.hold("t-1", 7)
    beat.start()
    beat.stop()
    assert beat.lost("t-1")
    beat.drop("t-1")
    assert not beat.lost("t-1")


@pytest.mark.parametrize("interval_s", [0.2, 1.0, 10.0, 60.0])
def test_retries_after_failed_beats_stay_within_a_quarter_of_the_interval(
    interval_s: float,
) -> None:
    """However long the outage, a failed beat is retried within a quarter of the interval,
    so the worker beats again well before 1.5 intervals of silence make it stale."""
    waits = [retry_wait_s(failures, interval_s) for failures in range(1, 40)]
    assert interval_s == retry_wait_s(0, interval_s)
    assert min(0.1, interval_s / 4) == waits[0]
    assert interval_s / 4 == max(waits)
    assert waits == sorted(waits)


def test_a_worker_taken_offline_is_told_apart_from_one_declared_dead() -> None:
    """Both end the beats and lose every claim; only offline says the runner must stop."""
    flags = []
    for status in (WorkerStatus.DEAD, WorkerStatus.OFFLINE):
        store = FlakyStore([WorkerStatus.IDLE, WorkerUnavailable("gone", status=status)])
        beat = _beat(store)
        beat.start()
        assert store.done.wait(5)
        beat.stop()
        flags.append((beat.dead.is_set(), beat.offline.is_set()))
    assert [(True, False), (True, True)] == flags
