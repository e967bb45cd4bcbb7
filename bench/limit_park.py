"""A usage limit parks the fleet: from the agent's limit event to the last worker of its
provider account no longer claiming.

Each trial: a fresh store (SQLite file, or a scratch PostgreSQL database), an orchestrator
of 4 workers with `--agent claude`, 12 tasks, and on PATH a `claude` of this script's
own that speaks Claude Code's stream-json: an init line, then (while the limit lasts, 30 s
ahead) after a random 0 to 200 ms a `rate_limit_event` with status `rejected`, the instant
it wrote the line logged; it then waits to be stopped. corral parks the provider account
when it reads that line; the park is the store's `provider.parked` event, and from its
commit every claim of a worker of that account (on any host) finds nothing, since the
claim transaction itself reads the park (there is nothing left to propagate).

- limit → parked: from the first limit line written to the park's commit (the event's
  time: the store's clock, this host's for both stores). This is "the last worker stops
  claiming": every claim that starts after it is refused by the store.
- claims after the park: `task.claimed` events later than the park, before the reset.
  Must be 0.
- the floor: the runner's poll period (50 ms), which bounds how soon a line is read.
  Target: the latency under one heartbeat interval (the default, 10 s).

    .venv/bin/python bench/limit_park.py [--trials 5] [--stores sqlite,postgresql]
"""

from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import sys
import time
from contextlib import suppress

import psutil

from corral import EventFilter, NewTask, enqueue, load_settings
from corral.model.events import Event
from corral.store import Store, open_store
from measure import Spread, Verdicts, banner, ms, table, temp_dir
from pg_peer import scratch_database
from pool_harness import corral_argv, pool_env, processes_of, wait_running

WORKERS = 4
TASKS = 12
LIMIT_AHEAD_S = 30
POLL_S = 0.05  # the runner's poll period (executor.run_command's default)
HEARTBEAT_S = 10.0  # settings.heartbeat_interval_s's default: the target
AGENT = """#!{python}
import json, os, random, sys, time, uuid
sys.stdin.read()
session = str(uuid.uuid4())
def emit(event):
    sys.stdout.write(json.dumps(event, separators=(",", ":")) + "\\n")
    sys.stdout.flush()
emit({{"type": "system", "subtype": "init", "session_id": session}})
until = float(open(os.environ["BENCH_RESET_AT"]).read())
if time.time() < until:
    time.sleep(random.uniform(0, 0.2))
    info = {{"status": "rejected", "resetsAt": int(until), "rateLimitType": "five_hour"}}
    emit({{"type": "rate_limit_event", "rate_limit_info": info, "session_id": session}})
    with open(os.environ["BENCH_LIMIT_LOG"], "a") as log:
        log.write(f"{{time.time()}}\\n")
    time.sleep(60)
emit({{"type": "result", "subtype": "success", "is_error": False, "session_id": session,
       "total_cost_usd": 0.01, "usage": {{"input_tokens": 1, "output_tokens": 1}}}})
"""


def trial(db: str, folder: str) -> tuple[float, int]:
    """One fleet at a limit: (seconds from the first limit line to the park, claims after)."""
    bin_dir = os.path.join(folder, "bin")
    os.makedirs(bin_dir, exist_ok=True)
    agent = os.path.join(bin_dir, "claude")
    with open(agent, "w", encoding="utf-8") as handle:
        handle.write(AGENT.format(python=sys.executable))
    os.chmod(agent, 0o700)  # the agent, run by this user only
    reset_file, limit_log = os.path.join(folder, "reset-at"), os.path.join(folder, "limits")
    with open(reset_file, "w", encoding="utf-8") as handle:
        handle.write(str(time.time() + LIMIT_AHEAD_S))
    env = {
        **pool_env(db),
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "BENCH_RESET_AT": reset_file,
        "BENCH_LIMIT_LOG": limit_log,
        "CORRAL_HEARTBEAT_INTERVAL_S": str(HEARTBEAT_S),
    }
    subprocess.run(corral_argv("init"), env=env, cwd=folder, capture_output=True, check=True)
    store = open_store(db)
    settings = load_settings(env)
    for n in range(TASKS):
        enqueue(store, NewTask(title=f"task {n}"), settings=settings)
    argv = corral_argv("orchestrator", "start", "--workers", str(WORKERS), "--agent", "claude")
    with open(os.path.join(folder, "orchestrator.log"), "ab") as log:
        proc = subprocess.Popen(
            argv, env=env, stdout=log, stderr=log, cwd=folder, start_new_session=True
        )
    try:
        wait_running(store, WORKERS)
        parked = _wait_parked(store)
        time.sleep(1.0)  # claims that would slip past the park would show by now
        events = store.events.list_events(EventFilter(limit=100_000))
    finally:
        _stop(proc, db)
        store.close()
    with open(limit_log, encoding="utf-8") as handle:
        first_limit = min(float(line) for line in handle if line.strip())
    at = parked.at.timestamp()
    later = [e for e in events if e.name == "task.claimed" and e.at.timestamp() > at]
    return at - first_limit, len(later)


def _wait_parked(store: Store) -> Event:
    """The provider.parked event, once there is one."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = store.events.list_events(EventFilter(names=("provider.parked",), limit=1))
        if found:
            return found[0]
        time.sleep(0.01)
    raise RuntimeError("the provider was never parked")


def _stop(proc: subprocess.Popen[bytes], db: str) -> None:
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    for left in processes_of(db):
        with suppress(psutil.Error):
            left.kill()
    proc.wait()


def main() -> int:
    """Run the trials on each store; print the spread and the verdicts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--stores", default="sqlite,postgresql")
    opts = parser.parse_args()
    banner("a usage limit parks the fleet", __doc__.split("\n\n")[1])
    random.seed(7)
    results: dict[str, list[tuple[float, int]]] = {}
    for name in opts.stores.split(","):
        results[name] = []
        for _ in range(opts.trials):
            with temp_dir("limit-park") as folder:
                if name == "sqlite":
                    os.makedirs(os.path.join(folder, ".corral"))
                    db = os.path.join(folder, ".corral", "corral.db")
                    results[name].append(trial(db, folder))
                else:
                    with scratch_database() as url:
                        results[name].append(trial(url, folder))
    rows, verdicts = [], Verdicts("limit_park")
    for name, found in results.items():
        spread = Spread.of([latency for latency, _ in found])
        later = sum(n for _, n in found)
        rows.append([name, spread.n, ms(spread.p50_s), ms(spread.p95_s), ms(spread.max_s), later])
        verdicts.check(
            f"{name}: limit → parked, max < one heartbeat ({HEARTBEAT_S:g} s)",
            f"{ms(spread.max_s)} ms ({spread.max_s / POLL_S:.1f}x the {POLL_S * 1000:g} ms poll)",
            spread.max_s < HEARTBEAT_S,
        )
        verdicts.check(f"{name}: claims after the park", str(later), later == 0)
    headers = ["store", "trials", "p50 ms", "p95 ms", "max ms", "claims after the park"]
    print(table(headers, rows))
    return verdicts.finish()


if __name__ == "__main__":
    sys.exit(main())
