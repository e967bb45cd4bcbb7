"""A batching Python worker (`run_worker(batch=k)`) in real processes: crashes, signals, fencing."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import CORRAL
from tests.runtime.conftest import wait_until
from tests.runtime.test_runner import Harness

import corral
from corral import EventFilter, InvalidInput, RunOutcome, Task, TaskStatus

# A worker process: quick no-op tasks, except the one titled "hang", which marks that it
# started and then waits for a gate file (or forever).
WORKER = """
import os, sys, time, corral
folder, batch = sys.argv[1], int(sys.argv[2])
def execute(task, ctx):
    if task.title == "hang":
        open(os.path.join(folder, "hanging"), "w").close()
        while not os.path.exists(os.path.join(folder, "gate")):
            time.sleep(0.01)
sys.exit(corral.run_worker(execute, batch=batch, name="batcher"))
"""


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    """A harness whose processes are all gone after the test."""
    harness = Harness(tmp_path)
    yield harness
    harness.close()


def start_worker(h: Harness, batch: int, log: Path | None = None) -> subprocess.Popen[bytes]:
    """The batching worker in its own process (its log lines in `log`, if given)."""
    argv = [sys.executable, "-c", WORKER, str(h.tmp), str(batch)]
    err = log.open("wb") if log else None
    proc = subprocess.Popen(argv, env=h.env, cwd=h.tmp, start_new_session=True, stderr=err)
    if err is not None:
        err.close()  # the worker holds its own copy
    h.procs.append(proc)
    return proc


def fill(h: Harness) -> list[str]:
    """11 quick tasks (so the batch grows to 4), the hanging one, then 6 more; their ids."""
    titles = [f"quick {n}" for n in range(11)] + ["hang"] + [f"after {n}" for n in range(6)]
    return [h.add(title) for title in titles]


def holding(h: Harness, count: int) -> corral.Worker:
    """Wait until the batching worker holds `count` claims with its hanging task running."""

    def ready() -> bool:
        workers = h.store.workers.list_workers()
        return (h.tmp / "hanging").exists() and bool(workers) and workers[0].active == count

    wait_until(ready, 20)
    return h.store.workers.list_workers()[0]


def completions(h: Harness, task_ids: list[str]) -> Counter[str]:
    """How many `task.completed` events each task has."""
    counts: Counter[str] = Counter()
    for task_id in task_ids:
        for e in h.store.events.list_events(EventFilter(task_id=task_id, limit=100)):
            counts[task_id] += e.name == "task.completed"
    return counts


def test_kill_9_of_a_worker_holding_k_claims_loses_none_and_completes_none_twice(
    h: Harness,
) -> None:
    """All k claims of a SIGKILLed batching worker are recovered as crashes; every task then
    completes exactly once."""
    ids = fill(h)
    worker = start_worker(h, batch=4)
    held = holding(h, 4)
    worker.kill()
    worker.wait()
    claims = {
        t.id for t in h.store.tasks.list_tasks(corral.TaskFilter(statuses=(TaskStatus.RUNNING,)))
    }
    assert 4 == len(claims)
    settings = corral.Settings(heartbeat_interval_s=0.2, retry_base_s=0)
    crashes = 0

    def recovered() -> bool:
        nonlocal crashes
        crashes += corral.reconcile_once(h.store, settings=settings).crashes
        return crashes >= 4

    wait_until(recovered, 20, interval_s=0.1)
    assert 4 == crashes
    for task_id in claims:
        task = h.task(task_id)
        assert (TaskStatus.READY, 1) == (task.status, task.crashes)
    unfinished = [r for r in h.store.runs.list_runs(worker_id=held.id) if r.outcome is None]
    assert [] == unfinished  # the dead worker's runs ended as killed
    (h.tmp / "gate").touch()
    remaining = len(ids) - sum(h.task(t).status is TaskStatus.DONE for t in ids)
    assert 0 == corral.run_worker(
        lambda task, ctx: None, db=h.db, batch=4, max_tasks=remaining, settings=settings
    )
    assert {TaskStatus.DONE} == {h.task(t).status for t in ids}
    assert {1} == set(completions(h, ids).values())


def test_sigterm_finishes_the_running_task_and_releases_the_ones_not_started(h: Harness) -> None:
    """Graceful shutdown with a batch held: the current task completes, the rest go back to
    ready with no attempt counted, their runs finished as shutdown; exit 0, deregistered."""
    ids = fill(h)
    log = h.tmp / "worker.log"
    worker = start_worker(h, batch=4, log=log)
    held = holding(h, 4)
    worker.send_signal(signal.SIGTERM)
    # The gate opens once the runner took the signal: before it, the hanging task could
    # finish and the rest start (the signal is handled in the main thread, when it runs).
    wait_until(lambda: b"worker.signal" in log.read_bytes(), 20)
    (h.tmp / "gate").touch()
    assert 0 == worker.wait(30)
    hang = h.task(ids[11])
    assert TaskStatus.DONE == hang.status
    runs = h.store.runs.list_runs(worker_id=held.id, limit=100)
    shut = [r for r in runs if r.outcome is RunOutcome.SHUTDOWN]
    assert 3 == len(shut)  # the batch was [hang, after 0, after 1, after 2]
    for run in shut:
        task = h.task(run.task_id)
        assert (TaskStatus.READY, 0) == (task.status, task.attempts)
    assert corral.WorkerStatus.OFFLINE == h.store.workers.get_worker(held.id).status
    assert {1} == set(
        completions(h, [t for t in ids if h.task(t).status is TaskStatus.DONE]).values()
    )


def test_a_done_from_elsewhere_wins_over_the_batching_workers_own_report(h: Harness) -> None:
    """A held task completed under its token by someone else keeps that result; the worker's
    run of it is recorded as done (reported by the agent), and it is completed once."""
    h.add("warm-up")  # a full batch of 1, so the next claim takes 2: first and second
    first, second = h.add("first"), h.add("second")
    results: list[str] = []

    def execute(task: Task, ctx: object) -> dict[str, object]:
        results.append(task.title)
        if task.title == "first":  # the other task of the batch is held, not started
            token = h.store.tasks.get_task(second).token
            corral.complete(h.store, second, token=token, result="elsewhere")
        return {"success": True, "output": "runner"}

    code = corral.run_worker(execute, db=h.db, batch=2, max_tasks=3)
    assert (0, ["warm-up", "first", "second"]) == (code, results)
    assert "elsewhere" == h.task(second).result
    assert {1} == set(completions(h, [first, second]).values())
    (run,) = h.store.runs.list_runs(task_id=second)
    assert RunOutcome.DONE == run.outcome


def test_run_worker_refuses_a_batch_below_one(h: Harness) -> None:
    """`batch` must be a whole number of at least 1; nothing is registered otherwise."""
    with pytest.raises(InvalidInput, match="batch"):
        corral.run_worker(lambda task, ctx: None, db=h.db, batch=0)
    assert [] == h.store.workers.list_workers()


def test_worker_start_call_with_batch_drains_the_queue(h: Harness) -> None:
    """`--call module:function --batch 8` runs every task once and exits 0 at --max-tasks."""
    (h.tmp / "handlers.py").write_text("def handle(task, ctx):\n    return None\n")
    ids = [h.add(f"t{n}") for n in range(20)]
    h.env["PYTHONPATH"] = str(h.tmp)
    assert 0 == h.start("--call", "handlers:handle", "--batch", "8", "--max-tasks", "20").wait(30)
    assert {TaskStatus.DONE} == {h.task(t).status for t in ids}
    assert 8 == h.store.workers.list_workers()[0].max_concurrent  # it may hold a batch of 8


@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        (("--exec", "true", "--batch", "2"), "--call"),
        (("--call", "m:f", "--batch", "0"), "at least 1"),
    ],
)
def test_worker_start_refuses_a_bad_batch(
    h: Harness, flags: tuple[str, ...], expected: str
) -> None:
    """--batch is a whole number of at least 1, and more than 1 only for --call workers."""
    run = subprocess.run(
        [CORRAL, "worker", "start", "--name", "w", *flags],
        env=h.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (2, 1) == (run.returncode, len(run.stderr.strip().splitlines()))
    assert "batch" in run.stderr and expected in run.stderr
    assert [] == h.store.workers.list_workers()


def test_reports_the_store_did_not_take_go_with_the_next_exchange(
    h: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store unavailable while reporting loses no report: it is sent again, and applied once."""
    from corral import StoreError
    from corral.runtime.worker import retries
    from corral.usecases import claims

    ids = [h.add(f"t{n}") for n in range(3)]
    real = claims.exchange
    refused: list[int] = []

    def flaky(*args: object, **kwargs: object) -> object:
        if kwargs.get("reports") and len(refused) < 2:
            refused.append(len(kwargs["reports"]))  # type: ignore[arg-type]
            raise StoreError("database: locked by another process for more than 10 s")
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(claims, "exchange", flaky)
    monkeypatch.setattr(retries, "REPORT_RETRIES", 0)  # no waits: the next exchange retries
    assert 0 == corral.run_worker(lambda task, ctx: None, db=h.db, max_tasks=3)
    assert 2 == len(refused)
    assert {TaskStatus.DONE} == {h.task(t).status for t in ids}
    assert {1} == set(completions(h, ids).values())
