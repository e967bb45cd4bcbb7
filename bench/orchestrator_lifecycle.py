"""The pool's reflexes and footprint: crash recovery, spawn, memory, stop.

- Recovery: a pool of one worker runs tasks of `sleep 30`. --kills times: once a task is
  running, SIGKILL its worker (wall clock read just before the signal) and wait for the
  task's `task.retry_scheduled` event, which puts it back in `ready`; the latency is that
  event's time (the store's clock, the same wall clock) minus the kill. Target: median < 1 s.
- Spawn: --spawns times, `worker_process.spawn` (what the supervisor calls) starts a worker,
  and the time runs until the store shows it registered and idle, ready to claim.
  Target: median < 500 ms.
- Memory: an orchestrator with 8 workers on tasks of `sleep 0.05`, after 5 s of work: the
  orchestrator process's RSS. Target: < 50 MB.
- Stop: an idle pool of 3: the wall time of `corral orchestrator stop` (the command, start
  to exit, the orchestrator then stopped), --stops times. Target: median < 2 s.

    .venv/bin/python bench/orchestrator_lifecycle.py [--kills 10] [--spawns 10] [--stops 3]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import threading
import time

import psutil

from corral import EventFilter, NewTask, TaskStatus, enqueue, load_settings
from corral.model.states import WorkerStatus
from corral.runtime.pool import worker_process
from corral.runtime.pool.worker_process import Layout
from corral.store import Store, open_store
from measure import Verdicts, banner, ms, table, temp_dir
from pool_harness import corral_argv, pool_env, running, wait_all_done, wait_running


def _until(predicate, timeout_s: float = 30.0):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not (found := predicate()):
        if time.monotonic() > deadline:
            raise SystemExit("condition not met within 30 s")
        time.sleep(0.002)
    return found


def recovery(kills: int) -> list[float]:
    """Seconds from SIGKILL of a busy worker to its task back in ready, per kill."""
    with temp_dir("orch-recover") as folder:
        db = os.path.join(folder, "corral.db")
        store = open_store(db)
        task_id = enqueue(store, NewTask(title="long"), settings=load_settings(pool_env(db))).id
        latencies = []
        with running(db, workers=1, exec_cmd="sleep 30"):
            for _ in range(kills):
                task = _until(lambda: _running_task(store, task_id))
                pid = store.workers.get_worker(task.worker_id).pid
                assert pid is not None  # a pool worker records its pid
                killed_at = time.time()
                os.kill(pid, signal.SIGKILL)
                token = task.token
                requeued = _until(lambda: _requeue_event(store, task_id, token))  # noqa: B023 - waited on at once
                latencies.append(requeued.at.timestamp() - killed_at)
        store.close()
    return latencies


def _running_task(store: Store, task_id: str):  # type: ignore[no-untyped-def]
    task = store.tasks.get_task(task_id)
    if task.status is TaskStatus.RUNNING and task.worker_id:
        worker = store.workers.get_worker(task.worker_id)
        return task if worker.status is WorkerStatus.BUSY else None
    return None


def _requeue_event(store: Store, task_id: str, token: int):  # type: ignore[no-untyped-def]
    for event in store.events.list_events(EventFilter(task_id=task_id, limit=1000)):
        if event.name == "task.retry_scheduled" and event.token == token:
            return event
    return None


def spawn_times(spawns: int) -> list[float]:
    """Seconds from spawn to a registered, idle worker, per spawn."""
    with temp_dir("orch-spawn") as folder:
        db = os.path.join(folder, "corral.db")
        store = open_store(db)
        settings = load_settings(pool_env(db)).with_values({"pool_exec": "true"}, "bench")
        layout = Layout(logs_dir=os.path.join(folder, "logs"))
        exited = threading.Event()
        times = []
        for n in range(spawns):
            exited.clear()
            began = time.perf_counter()
            process = worker_process.spawn(
                f"slot-{n}", options=settings.pool.options, env=pool_env(db), layout=layout,
                on_exit=lambda pid, code: exited.set(),
            )  # fmt: skip
            _until(lambda: _idle_pid(store, process.pid))  # noqa: B023 - waited on at once
            times.append(time.perf_counter() - began)
            process.signal(signal.SIGTERM)
            exited.wait(30)
            process.close()
        store.close()
    return times


def _idle_pid(store: Store, pid: int) -> bool:
    return any(w.pid == pid for w in store.workers.list_workers((WorkerStatus.IDLE,)))


def rss_with_8_workers() -> float:
    """The orchestrator's RSS in bytes, with 8 workers, after 5 s of work."""
    with temp_dir("orch-rss") as folder:
        db = os.path.join(folder, "corral.db")
        store = open_store(db)
        settings = load_settings(pool_env(db))
        for n in range(400):
            enqueue(store, NewTask(title=f"short {n}"), settings=settings)
        with running(db, workers=8, exec_cmd="sleep 0.05") as proc:
            wait_running(store, 8)
            time.sleep(5)
            rss = psutil.Process(proc.pid).memory_info().rss
            wait_all_done(store, 400)
        store.close()
    return float(rss)


def stop_times(stops: int) -> list[float]:
    """Wall seconds of `corral orchestrator stop` on an idle pool of 3, per stop."""
    times = []
    with temp_dir("orch-stop") as folder:
        db = os.path.join(folder, "corral.db")
        store = open_store(db)
        for _ in range(stops):
            with running(db, workers=3, exec_cmd="true") as proc:
                wait_running(store, 3)
                began = time.perf_counter()
                subprocess.run(
                    corral_argv("orchestrator", "stop"),
                    env=pool_env(db),
                    check=True,
                    capture_output=True,
                )
                times.append(time.perf_counter() - began)
                proc.wait(timeout=30)
            assert str(store.orchestrators.get_orchestrator().status) == "stopped"
        store.close()
    return times


def main() -> int:
    """Measure, print, judge."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--spawns", type=int, default=10)
    parser.add_argument("--stops", type=int, default=3)
    args = parser.parse_args()
    banner("orchestrator lifecycle", "crash recovery, spawn, memory and stop of the pool")
    recover_s, spawn_s = recovery(args.kills), spawn_times(args.spawns)
    rss, stop_s = rss_with_8_workers(), stop_times(args.stops)
    rows = [
        ["kill -9 to ready", args.kills, ms(statistics.median(recover_s)), ms(max(recover_s))],
        ["spawn to idle worker", args.spawns, ms(statistics.median(spawn_s)), ms(max(spawn_s))],
        ["idle pool of 3: stop", args.stops, ms(statistics.median(stop_s)), ms(max(stop_s))],
    ]
    print(table(["what", "n", "median ms", "max ms"], rows))
    print(f"orchestrator RSS with 8 workers: {rss / 2**20:.1f} MB")
    verdicts = Verdicts("orchestrator lifecycle")
    median = statistics.median
    verdicts.check(
        "kill -9 to ready: median < 1 s", ms(median(recover_s)) + " ms", median(recover_s) < 1
    )
    verdicts.check("spawn: median < 500 ms", ms(median(spawn_s)) + " ms", median(spawn_s) < 0.5)
    verdicts.check("RSS with 8 workers < 50 MB", f"{rss / 2**20:.1f} MB", rss < 50 * 2**20)
    verdicts.check("idle pool stop: median < 2 s", ms(median(stop_s)) + " ms", median(stop_s) < 2)
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
