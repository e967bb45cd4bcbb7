"""`make run`: corral's primitives at work on a demo workload you can watch.

Three copies of examples/worker-loop.sh (the README's bash loop) process twenty tasks
from a fresh SQLite store. Some tasks fail once and are retried after a backoff; some
wait on others; one worker is killed with SIGKILL mid-task, and the reconcile pass this
script runs every second (the orchestrator's job, once it exists) declares it dead and
returns its task to the queue. Events stream as they happen; a summary ends the run.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import corral

HERE = Path(__file__).resolve().parent
DEMO_DIR = HERE.parent / ".corral" / "demo"
LOOP = HERE / "worker-loop.sh"
DEADLINE_S = 120
SETTINGS = {"CORRAL_HEARTBEAT_INTERVAL_S": "2", "CORRAL_RETRY_BASE_S": "2", "CORRAL_LEASE_S": "60"}


def enqueue_workload(store: corral.Store, settings: corral.Settings, rng: random.Random) -> None:
    """Twenty tasks: mixed priorities, a dependency chain, three that fail once."""

    def add(title: str, **fields: object) -> corral.Task:
        return corral.enqueue(store, corral.NewTask(title=title, **fields), settings=settings)  # type: ignore[arg-type]

    first = add("Design the schema", priority=9)
    second = add("Write the migration", depends_on=(first.id,), priority=5)
    add("Backfill old rows", depends_on=(second.id,))
    for n in range(17):
        payload = {"seconds": round(rng.uniform(0.3, 1.2), 2), "fail_times": int(n % 6 == 0)}
        title = f"Fix issue #{100 + n}" + (" (flaky)" if payload["fail_times"] else "")
        add(title, priority=rng.randint(0, 5), payload=payload)


def start_loops(env: dict[str, str]) -> list[subprocess.Popen[bytes]]:
    """Three bash workers, each in its own process group."""
    return [
        subprocess.Popen(["bash", str(LOOP), f"loop-{n}"], env=env, start_new_session=True)
        for n in (1, 2, 3)
    ]


def show_events(store: corral.Store, after_id: int) -> int:
    """Print events newer than `after_id`; return the newest id."""
    for event in store.list_events(corral.EventFilter(after_id=after_id, limit=500)):
        subject = event.task_id or event.worker_id
        move = f"{event.from_status or ''} -> {event.to_status}" if event.to_status else ""
        why = f"  ({event.reason})" if event.reason else ""
        print(f"  {event.at:%H:%M:%S}  {event.name:22} {subject:14} {move}{why}", flush=True)
        after_id = event.id
    return after_id


def kill_one_busy_loop(store: corral.Store, loops: list[subprocess.Popen[bytes]]) -> bool:
    """SIGKILL the process group of a loop whose worker holds a task."""
    busy = store.list_workers((corral.WorkerStatus.BUSY,))
    if not busy:
        return False
    victim = busy[0]
    loop = loops[int(victim.name.rsplit("-", 1)[1]) - 1]
    print(f"\n  *** killing worker {victim.name} ({victim.id}) with SIGKILL mid-task ***\n")
    os.killpg(loop.pid, signal.SIGKILL)
    loop.wait()
    return True


def unfinished(store: corral.Store) -> int:
    """Tasks not yet done or failed."""
    final = {corral.TaskStatus.DONE, corral.TaskStatus.FAILED}
    return sum(t.status not in final for t in store.list_tasks(corral.TaskFilter()))


def run(store: corral.Store, settings: corral.Settings, env: dict[str, str]) -> None:
    """Start the loops, reconcile every second, stream events until the work is done."""
    loops = start_loops(env)
    started, last_event, killed = time.monotonic(), 0, False
    try:
        while unfinished(store) and time.monotonic() - started < DEADLINE_S:
            time.sleep(1.0)
            if not killed and time.monotonic() - started > 3:
                killed = kill_one_busy_loop(store, loops)
            report = corral.reconcile_once(store, settings=settings)
            last_event = show_events(store, last_event)
            if report.total:
                found = ", ".join(
                    f"{k.replace('_', ' ')} {v}" for k, v in report.to_dict().items() if v
                )
                print(f"  reconcile: {found}", flush=True)
    finally:
        for loop in loops:
            if loop.poll() is None:
                loop.send_signal(signal.SIGTERM)  # the loop's trap deregisters its worker
        for loop in loops:
            loop.wait(timeout=30)
        show_events(store, last_event)


def summarize(store: corral.Store, env: dict[str, str], elapsed_s: float) -> None:
    """`corral worker list` and the tasks by status."""
    print("\n$ corral worker list", flush=True)
    subprocess.run(["corral", "worker", "list"], env=env, check=False)
    tasks = store.list_tasks(corral.TaskFilter())
    by_status: dict[str, int] = {}
    for task in tasks:
        by_status[str(task.status)] = by_status.get(str(task.status), 0) + 1
    runs = sum(t.attempts for t in tasks)
    crashes = sum(t.crashes for t in tasks)
    print(
        f"\n{len(tasks)} tasks in {elapsed_s:.1f} s: {by_status}; {runs} runs, {crashes} crash(es)"
    )
    print(f"store: {store.url}  (try: CORRAL_DB={store.url} corral events --limit 20)")


def main() -> int:
    """Run the demo from a fresh store."""
    if shutil.which("jq") is None:
        print("the demo's bash workers need jq: apt-get install jq (or brew install jq)")
        return 2
    shutil.rmtree(DEMO_DIR, ignore_errors=True)
    DEMO_DIR.mkdir(parents=True)
    db = str(DEMO_DIR / "corral.db")
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, **SETTINGS, "CORRAL_DB": db, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    settings = corral.load_settings(env)
    with corral.open_store(db) as store:
        enqueue_workload(store, settings, random.Random(7))
        print(f"20 tasks queued in {db}; starting 3 bash workers (examples/worker-loop.sh)\n")
        began = time.monotonic()
        run(store, settings, env)
        summarize(store, env, time.monotonic() - began)
        return 0 if unfinished(store) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
