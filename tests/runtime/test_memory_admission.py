"""Memory-aware admission: a worker whose agent states more memory per run than the host
has available claims nothing (the task stays ready) and says why, in a runner with an
injected reading and in a real pool whose profile states more than any host has."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from tests.runtime.conftest import wait_until

import corral
from corral import NewTask, Settings, SystemClock, TaskStatus, open_store
from corral.model.admission import MB, memory_hold
from corral.model.agents import MAX_MEMORY_MB
from corral.runtime.worker.command_job import CommandJob
from corral.runtime.worker.runner import Runner, RunnerConfig

BOUND_S = 30.0
FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"


def test_the_hold_says_what_a_run_needs_and_what_the_host_has() -> None:
    """Below the need: the reason; at or above it, or no need stated: None."""
    assert "a run needs 1000 MB, 999 MB available" == memory_hold(1000, 999 * MB)
    assert (None, None) == (memory_hold(1000, 1000 * MB), memory_hold(None, 0))


def test_a_runner_claims_nothing_while_memory_is_short_and_runs_once_it_is_back(
    tmp_path: Path,
) -> None:
    """The reading below the profile's need: the task stays ready however often the worker
    looks; the reading back above it: the task runs."""
    store = open_store(str(tmp_path / "corral.db"))
    available = [10 * MB]
    reads = []

    def read() -> int:
        reads.append(available[0])
        return available[0]

    runner = Runner(
        store,
        RunnerConfig(name="big", memory_mb=1000, idle_min_s=0.01, idle_max_s=0.02),
        CommandJob(argv=("true",), runs_dir=str(tmp_path / "runs")),
        settings=Settings(),
        clock=SystemClock(),
        memory_available=read,
    )
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    try:
        task = corral.enqueue(store, NewTask(title="needs a gigabyte"))
        wait_until(lambda: len(reads) >= 5, BOUND_S)  # looked again after the task was added
        assert (TaskStatus.READY, []) == (
            store.tasks.get_task(task.id).status,
            store.runs.list_runs(task_id=task.id),
        )
        available[0] = 2000 * MB
        wait_until(lambda: store.tasks.get_task(task.id).status is TaskStatus.DONE, BOUND_S)
    finally:
        runner.stop(immediate=True)
        thread.join(BOUND_S)
        store.close()


def test_a_pool_slot_holds_back_and_status_says_why(pool: Any) -> None:
    """A profile stating more memory per run than any host has: its slot runs, claims
    nothing, the task stays ready, and `corral status` says why the slot holds back."""
    pool.env["PATH"] = f"{FAKES}:{pool.env['PATH']}"  # the fake claude (tests/agents/fakes)
    agents = pool.folder / ".corral" / "agents"
    agents.mkdir()
    (agents / "huge.toml").write_text(f'extends = "claude"\nmemory_mb = {MAX_MEMORY_MB}\n')
    (task,) = pool.add(1)
    pool.start("--workers", "1", "--agent", "huge", workers=None)
    pool.wait_running(1)
    log = pool.folder / ".corral" / "logs" / "workers" / "slot-1.log"
    pool.wait(lambda: log.exists() and "worker.memory_held" in log.read_text(), BOUND_S)
    pool.wait(lambda: "held" in pool.store.orchestrators.get_orchestrator().slots[0], BOUND_S)
    assert TaskStatus.READY is pool.store.tasks.get_task(task).status
    shown = pool.corral("status").stdout
    expected = f"slot slot-1 holds back: a run needs {MAX_MEMORY_MB} MB, "
    assert expected in shown
    assert 0 == pool.corral("orchestrator", "stop", "--graceful").returncode
