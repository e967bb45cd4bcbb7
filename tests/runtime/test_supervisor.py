"""The supervisor's state machine on a fake clock, with fake processes: restarts, failure, stop.

Exits are handed in as the watcher threads would (`_on_exit`); time moves only when the
test advances the clock. Real processes are the subject of test_orchestrator.py.
"""

from __future__ import annotations

import itertools
import logging
import signal
import threading

import pytest

from corral import NewTask, TaskStatus, enqueue
from corral.foundation.settings import Settings
from corral.model.orchestrators import SlotState
from corral.model.states import WorkerStatus
from corral.model.workers import NewWorker
from corral.runtime.pool.supervisor import Supervisor
from corral.runtime.pool.worker_process import Layout
from corral.usecases.claims import claim_next
from corral.usecases.workers import register

POLICY = {
    "pool_workers": 2,
    "pool_exec": "agent",
    "restart_delay_s": 1,
    "max_restart_delay_s": 4,
    "max_restarts": 2,
    "min_uptime_s": 10,
    "kill_timeout_s": 3,
}


class FakeProcess:
    """Stands for a worker process: remembers the signals it was sent."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.signals: list[int] = []

    def signal(self, sig: int) -> bool:
        self.signals.append(sig)
        return True

    def close(self) -> None:
        """Nothing to close: a fake holds no pidfd."""


@pytest.fixture
def spawned():
    """Every fake process started, in order."""
    return []


@pytest.fixture
def supervisor(store, clock, tmp_path, spawned):
    """A supervisor of two slots on the fake clock, whose spawns are fake processes."""
    pids = itertools.count(4_000_000)

    def spawner(name, **_):
        spawned.append((name, FakeProcess(next(pids))))
        return spawned[-1][1]

    settings = Settings().with_values(POLICY, "test")
    made = Supervisor(
        store,
        settings=settings,
        env={},
        layout=Layout(logs_dir=str(tmp_path / "logs")),
        clock=clock,
        log=logging.getLogger("test.supervisor"),
        wake=threading.Event(),
        spawner=spawner,
    )
    made.start()
    return made


def _exit(supervisor, slot_index, code=1):
    """The slot's current process exits with `code`, and the loop handles it."""
    supervisor._on_exit(supervisor.slots[slot_index].process.pid, code)
    supervisor.tick()


def test_start_fills_every_slot(supervisor, spawned):
    """Two slots, two processes, both starting."""
    assert ["slot-1", "slot-2"] == [name for name, _ in spawned]
    assert [SlotState.STARTING] * 2 == [s.state for s in supervisor.slots]


def test_an_exit_restarts_the_slot_after_a_delay_that_doubles(supervisor, spawned, clock):
    """1 s, then 2 s: nothing is started before the delay has passed."""
    _exit(supervisor, 0)
    assert (SlotState.BACKOFF, 2) == (supervisor.slots[0].state, len(spawned))
    clock.advance(0.9)
    supervisor.tick()
    assert 2 == len(spawned)
    clock.advance(0.1)
    supervisor.tick()
    assert (SlotState.STARTING, 3) == (supervisor.slots[0].state, len(spawned))
    _exit(supervisor, 0)
    clock.advance(1.9)
    supervisor.tick()
    assert 3 == len(spawned)
    clock.advance(0.1)
    supervisor.tick()
    assert 4 == len(spawned)
    assert (2, 1) == (supervisor.slots[0].history.total, supervisor.slots[0].last_exit_code)


def test_past_max_restarts_the_slot_fails_and_is_replaced_after_the_cap(supervisor, spawned, clock):
    """The third quick exit in a row fails the slot; a fresh one starts max_restart_delay later."""
    for delay_s in (1, 2):
        _exit(supervisor, 0)
        clock.advance(delay_s)
        supervisor.tick()
    _exit(supervisor, 0)
    assert SlotState.FAILED == supervisor.slots[0].state
    clock.advance(3.9)
    supervisor.tick()
    assert SlotState.FAILED == supervisor.slots[0].state
    clock.advance(0.1)
    supervisor.tick()
    assert SlotState.STARTING == supervisor.slots[0].state
    assert 0 == supervisor.slots[0].history.streak


def test_stop_sends_sigterm_then_sigquit_after_the_grace_then_sigkill(supervisor, spawned, clock):
    """SIGTERM now, SIGQUIT at the grace, SIGKILL kill_timeout_s later; no restart after exit."""
    supervisor.stop(5)
    process = supervisor.slots[0].process
    assert [signal.SIGTERM] == process.signals
    clock.advance(5)
    supervisor.tick()
    assert [signal.SIGTERM, signal.SIGQUIT] == process.signals
    clock.advance(3)
    supervisor.tick()
    assert [signal.SIGTERM, signal.SIGQUIT, signal.SIGKILL] == process.signals
    _exit(supervisor, 0, code=-9)
    _exit(supervisor, 1, code=0)
    assert supervisor.all_stopped()
    assert [SlotState.STOPPED] * 2 == [s.state for s in supervisor.slots]
    assert 2 == len(spawned)


def test_an_exit_returns_the_workers_task_to_the_queue_as_a_crash(supervisor, store, settings):
    """The worker registered under the slot's name and pid dies: its claim expires at once."""
    pid = supervisor.slots[0].process.pid
    worker = register(store, NewWorker(name="slot-1", pid=pid)).worker
    task = enqueue(store, NewTask(title="t"), settings=settings)
    assert claim_next(store, worker.id) is not None
    _exit(supervisor, 0, code=-9)
    after = store.tasks.get_task(task.id)
    assert (TaskStatus.READY, 1) == (after.status, after.crashes)
    assert WorkerStatus.DEAD == store.workers.get_worker(worker.id).status
