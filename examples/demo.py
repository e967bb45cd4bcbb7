"""`make run`: an orchestrator with a pool of three workers works through a demo workload.

A fresh SQLite store gets eighteen tasks: mixed priorities, a dependency chain, and three
flaky ones whose first attempt fails (examples/agent.sh) and is retried after a backoff.
`corral orchestrator start --workers 3 --exec examples/agent.sh` runs them; a few seconds
in, this script kills one busy worker with SIGKILL, and the orchestrator returns its task
to the queue at once and restarts it after its restart delay. Events stream as they
happen; once every task is finished the orchestrator is stopped gracefully and
`corral status` ends the run.
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
AGENT = HERE / "agent.sh"
DEADLINE_S = 90
KILL_AFTER_S = 3.0
# Short intervals, so that restarts, retries and reconcile passes show within the minute.
CONFIG = """\
[heartbeat]
interval = "1s"

[reconcile]
interval = "5s"

[retry]
base = "1s"
jitter = 0

[process]
restart_delay = "1s"
min_uptime = "5s"
"""
SHOWN = {
    "task.claimed",
    "task.completed",
    "task.retry_scheduled",
    "task.failed",
    "task.unblocked",
    "task.crashed",
    "task.lease_expired",
    "worker.started",
    "worker.dead",
    "orchestrator.started",
    "orchestrator.stopped",
}


def enqueue_workload(store: corral.Store, settings: corral.Settings, rng: random.Random) -> int:
    """Eighteen tasks: a dependency chain, three flaky tasks, the rest plain; how many."""

    def add(title: str, **fields: object) -> corral.Task:
        return corral.enqueue(store, corral.NewTask(title=title, **fields), settings=settings)  # type: ignore[arg-type]

    first = add("Design the schema", priority=9)
    second = add("Write the migration", depends_on=(first.id,), priority=5)
    add("Backfill old rows", depends_on=(second.id,))
    for n in range(15):
        flaky = " (flaky)" if n % 5 == 0 else ""
        add(f"Fix issue #{100 + n}{flaky}", priority=rng.randint(0, 5))
    return 18


def show_events(store: corral.Store, after_id: int, names: dict[str, str]) -> int:
    """Print the interesting events newer than `after_id`; return the newest id."""
    for event in store.list_events(corral.EventFilter(after_id=after_id, limit=500)):
        after_id = event.id
        if event.name not in SHOWN:
            continue
        who = names.get(event.worker_id or "", event.worker_id or "")
        move = f"{event.from_status or ''} -> {event.to_status}" if event.to_status else ""
        why = f"  ({event.reason})" if event.reason else ""
        print(
            f"  {event.at:%H:%M:%S}  {event.name:22} {event.task_id or '':14} {who:7} {move}{why}"
        )
    return after_id


def progress(store: corral.Store) -> str:
    """`done 5/18  running 3  ready 9 ...`."""
    counts = store.task_counts()
    total = sum(counts.values())
    rest = "  ".join(f"{s} {n}" for s, n in counts.items() if s != "done")
    return f"  -- done {counts.get('done', 0)}/{total}  {rest}"


def kill_one_busy_worker(store: corral.Store) -> bool:
    """SIGKILL a worker process that holds a task."""
    busy = [w for w in store.list_workers((corral.WorkerStatus.BUSY,)) if w.pid]
    if not busy:
        return False
    victim = busy[0]
    print(f"\n  *** killing {victim.name} (pid {victim.pid}) with SIGKILL mid-task ***\n")
    os.kill(victim.pid or 0, signal.SIGKILL)
    return True


def unfinished(store: corral.Store) -> int:
    """Tasks not yet done or failed."""
    counts = store.task_counts()
    return sum(n for status, n in counts.items() if status not in ("done", "failed"))


def watch(store: corral.Store) -> None:
    """Stream events and progress until the workload is finished, killing one worker early on."""
    began, last_event, killed, last_progress = time.monotonic(), 0, False, ""
    while unfinished(store) and time.monotonic() - began < DEADLINE_S:
        time.sleep(0.25)
        if not killed and time.monotonic() - began > KILL_AFTER_S:
            killed = kill_one_busy_worker(store)
        names = {w.id: w.name for w in store.list_workers()}
        last_event = show_events(store, last_event, names)
        line = progress(store)
        if line != last_progress:
            print(line, flush=True)
            last_progress = line


def corral_cli(env: dict[str, str], *args: str) -> int:
    """Run a corral command, its output shown."""
    print(f"\n$ corral {' '.join(args)}", flush=True)
    return subprocess.run(
        [sys.executable, "-m", "corral.cli.main", *args], env=env, check=False
    ).returncode


def main() -> int:
    """Run the demo from a fresh store."""
    shutil.rmtree(DEMO_DIR, ignore_errors=True)
    DEMO_DIR.mkdir(parents=True)
    (DEMO_DIR / "config.toml").write_text(CONFIG)
    db = str(DEMO_DIR / "corral.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DB"] = db
    settings = corral.load_settings(env, config_path=str(DEMO_DIR / "config.toml"))
    with corral.open_store(db) as store:
        count = enqueue_workload(store, settings, random.Random(7))
        print(f"{count} tasks queued in {db}")
        print("$ corral orchestrator start --workers 3 --exec examples/agent.sh\n", flush=True)
        began = time.monotonic()
        with open(DEMO_DIR / "orchestrator.log", "wb") as log:
            orchestrator = subprocess.Popen(
                [sys.executable, "-m", "corral.cli.main", "orchestrator", "start",
                 "--workers", "3", "--exec", str(AGENT)],
                env=env, stdout=log, stderr=log, start_new_session=True,
            )  # fmt: skip
        try:
            watch(store)
        finally:
            corral_cli(env, "orchestrator", "stop", "--graceful", "--timeout", "30s")
            orchestrator.wait(timeout=60)
        corral_cli(env, "status")
        tasks = store.list_tasks(corral.TaskFilter())
        runs, crashes = sum(t.attempts for t in tasks), sum(t.crashes for t in tasks)
        elapsed_s = time.monotonic() - began
        print(f"\n{len(tasks)} tasks in {elapsed_s:.1f} s; {runs} runs, {crashes} crash(es)")
        print(f"orchestrator log: {DEMO_DIR / 'orchestrator.log'}")
        print(f"try: export CORRAL_DB={db}; corral events --limit 20; corral worker logs slot-1")
        return 0 if unfinished(store) == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
