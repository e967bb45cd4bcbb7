"""Chaos: workers of a pool killed at random while it drains a queue; nothing lost or doubled."""

from __future__ import annotations

import os
import random
import signal
import time
from typing import Any

import pytest

from corral import EventFilter, TaskFilter, TaskStatus
from corral.model.states import CLAIMING

CHAOS_ENV = {
    "AGENT_SLEEP_S": "0.06",  # 300 tasks on 4 workers take >= 4.5 s: at least 10 kills
    "CORRAL_RESTART_DELAY_S": "0.05",
    "CORRAL_MAX_RESTART_DELAY_S": "0.2",
    "CORRAL_MAX_RESTARTS": "1000",  # kills are the test's doing, not a broken slot
    "CORRAL_MAX_CRASHES": "1000",
    "CORRAL_MAX_ATTEMPTS": "1000",
}


def _kill_a_random_worker(pool: Any, rng: random.Random) -> bool:
    """SIGKILL one registered live worker of the pool; False if none was found."""
    host = os.uname().nodename
    pids = [w.pid for w in pool.store.workers.list_workers(tuple(CLAIMING)) if w.hostname == host]
    if not pids:
        return False
    try:
        os.kill(rng.choice(pids), signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.slow
def test_random_kills_while_draining_300_tasks_lose_and_double_nothing(pool: Any):
    """4 workers, a kill every 300 ms until the queue is empty: every task done exactly once."""
    pool.env.update(CHAOS_ENV)
    ids = pool.add(300)
    pool.start(workers=4)
    rng, kills = random.Random(4), 0
    deadline = time.monotonic() + 100

    def unfinished() -> int:
        return len(
            pool.store.tasks.list_tasks(TaskFilter(statuses=(TaskStatus.READY, TaskStatus.RUNNING)))
        )

    while unfinished() and time.monotonic() < deadline:
        time.sleep(0.3)
        kills += _kill_a_random_worker(pool, rng)
    pool.wait(lambda: unfinished() == 0, 30)

    tasks = [pool.store.tasks.get_task(t) for t in ids]
    assert [TaskStatus.DONE] * 300 == [t.status for t in tasks]
    completed = [
        e.task_id
        for e in pool.store.events.list_events(EventFilter(limit=100_000))
        if e.name == "task.completed"
    ]
    assert sorted(ids) == sorted(completed)  # each task completed exactly once
    assert all(t.attempts == 1 + t.crashes for t in tasks)  # every extra attempt is a crash
    crashes = sum(t.crashes for t in tasks)
    assert 10 <= kills
    assert 1 <= crashes <= kills
