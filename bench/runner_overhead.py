"""Runner overhead: `corral worker start --exec true` beside a bare Python loop that runs
`true` with subprocess, in the same run.

- bare: `subprocess.run(["true"], check=True)`, N times, in this process.
- corral: one runner, `.venv/bin/corral worker start --name NAME --exec true --max-tasks N`,
  on a store bulk-loaded with N ready tasks (`CORRAL_DB` names it); the wall time of the
  whole command, start-up included. Each task is a claim, a run record, `true` in its own
  session with the prompt on its stdin and its output in the run's transcript and stderr
  files, the sweep for processes it left, and the report. "start-up" is the time from
  spawning the command to its `worker.started` log line (registered, about to claim).
- The two alternate, in both orders, --reps times; the figures are medians. On a miss, or
  with --profile, a child process runs the same runner in-process with its phases timed
  (measure.PhaseTimer), then a bare loop with Popen and wait timed apart, and the script
  prints where one task's time goes.

    .venv/bin/python bench/runner_overhead.py [--tasks 1000] [--reps 3] [--profile]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from measure import (
    VENV_BIN,
    PhaseTimer,
    Verdicts,
    banner,
    bulk_load,
    count_tasks,
    dump,
    fresh_process_env,
    new_store,
    phase_rows,
    spawned,
    table,
    tail,
    temp_dir,
    us,
)

CORRAL = os.path.join(VENV_BIN, "corral")
# The owner's bound: corral's own time per command task, what a task costs beyond the bare
# loop's run of the same command (the run record, capture, the sweep, the report), at most
# 3 ms. It replaces "half the bare loop's rate", which the issue's own requirements exceed.
TARGET_S = 0.003
TIMEOUT_S = 240


# -- the two sides --------------------------------------------------------------------------


def bare_loop(tasks: int) -> float:
    """Seconds for `tasks` runs of `true` through subprocess.run."""
    began = time.perf_counter()
    for _ in range(tasks):
        subprocess.run(["true"], check=True)
    return time.perf_counter() - began


def corral_runner(folder: str, name: str, tasks: int) -> tuple[float, float]:
    """Drain `tasks` tasks with `corral worker start --exec true`; (seconds, start-up seconds)."""
    path = os.path.join(folder, f"{name}.db")
    new_store(path).close()
    bulk_load(path, tasks)
    log = os.path.join(folder, f"{name}.log")
    argv = [CORRAL, "worker", "start", "--name", name, "--exec", "true"]
    argv += ["--max-tasks", str(tasks)]
    env = fresh_process_env(path)
    with open(log, "w") as err:
        spawned_at = time.time()
        began = time.perf_counter()
        with spawned(argv, env=env, cwd=folder, stdout=subprocess.DEVNULL, stderr=err) as proc:
            code = proc.wait(timeout=TIMEOUT_S)
        elapsed = time.perf_counter() - began
    done = count_tasks(path, "done")
    if code != 0 or done != tasks:
        raise RuntimeError(f"corral worker start exited {code}, {done}/{tasks} done:\n{tail(log)}")
    return elapsed, started_at(log) - spawned_at


def started_at(log: str) -> float:
    """The epoch time of the runner's `worker.started` line (its log has ms precision)."""
    with open(log, encoding="utf-8") as handle:
        for line in handle:
            if " worker.started " in line:
                # logging's asctime: local time, then ",mmm"
                return (
                    time.mktime(time.strptime(line[:19], "%Y-%m-%d %H:%M:%S"))
                    + int(line[20:23]) / 1000
                )
    raise RuntimeError(f"no worker.started line in {log}")


# -- profile (a child process) --------------------------------------------------------------

PHASES = [
    (
        "corral.store.claims",
        "Claims",
        "exchange",
        "store.claims.exchange: report + claim (write transaction)",
    ),
    ("corral.runtime.worker.lanes", None, "event", "runner: log lines (DEBUG: off)"),
    ("corral.runtime.worker.batches", None, "event", "runner: log lines (DEBUG: off)"),
    ("corral.runtime.worker.command_job", None, "prepare", "prompt, environment, paths"),
    (
        "corral.runtime.worker.executor",
        None,
        "_spawn",
        "spawn: spare files renamed, files opened, pipe",
    ),
    (
        "corral.runtime.worker.spawn",
        None,
        "_inheritable",
        "spawn: list descriptors not close-on-exec",
    ),
    ("corral.runtime.worker.spawn", None, "_posix_spawn", "spawn: posix_spawn (vfork + exec)"),
    ("subprocess", "Popen", "_execute_child", "spawn: fork + exec (Popen._execute_child)"),
    (
        "corral.runtime.worker.executor",
        None,
        "_start_feeder",
        "spawn: start the prompt writer thread",
    ),
    (
        "corral.runtime.worker.executor",
        None,
        "_create_time",
        "spawn: psutil create_time of the child",
    ),
    (
        "corral.runtime.worker.executor",
        None,
        "_supervise",
        "watch: poll waitid until the child exits",
    ),
    ("corral.runtime.worker.executor", None, "_descendants", "end: walk the child's process tree"),
    (
        "corral.runtime.worker.executor",
        None,
        "_marked",
        "end: scan every process for CORRAL_RUN_ID",
    ),
    ("corral.runtime.worker.executor", None, "_signal_group", "end: SIGTERM/SIGKILL the group"),
    ("corral.runtime.worker.executor", None, "_wait_gone", "end: wait until the tree is gone"),
    ("corral.runtime.worker.spawn", "Child", "reap", "end: reap the child"),
    ("corral.runtime.worker.executor", None, "_tail", "report: tail of stderr"),
    (
        "corral.runtime.worker.command_job",
        None,
        "last_usage",
        "report: usage line of the transcript",
    ),
]


def profile_child(path: str, tasks: int) -> dict[str, Any]:
    """Drain `tasks` tasks with an in-process runner, phases timed; then a timed bare loop."""
    import importlib

    import psutil

    from corral.foundation.settings import load_settings
    from corral.runtime.worker.command_job import CommandJob
    from corral.runtime.worker.runner import Runner, RunnerConfig
    from corral.store import open_store
    from corral.store.location import config_path, runs_dir

    timer = PhaseTimer()
    for module, cls, attr, label in PHASES:
        owner = importlib.import_module(module)
        timer.wrap(getattr(owner, cls) if cls else owner, attr, label)
    job = CommandJob(argv=("true",), runs_dir=runs_dir(path))
    config = RunnerConfig(name="bench-prof", max_tasks=tasks)
    settings = load_settings(config_path=config_path(path))
    with open_store(path) as store:
        began = time.perf_counter()
        code = Runner(store, config, job, settings=settings).run()
        elapsed = time.perf_counter() - began
    timer.restore()
    popen_s = wait_s = 0.0
    for _ in range(tasks):
        t0 = time.perf_counter()
        proc = subprocess.Popen(["true"])
        t1 = time.perf_counter()
        proc.wait()
        popen_s, wait_s = popen_s + t1 - t0, wait_s + time.perf_counter() - t1
    return {
        "seconds": elapsed,
        "code": code,
        "done": count_tasks(path, "done"),
        "phases": timer.report(),
        "missing": timer.missing,
        "bare": {"Popen (fork + exec)": popen_s, "wait (the child runs and exits)": wait_s},
        "processes": len(psutil.pids()),
    }


def profile(folder: str, tasks: int) -> None:
    """Run the profile child; print where one task's time goes, beside the bare loop's."""
    path = os.path.join(folder, "profile.db")
    new_store(path).close()
    bulk_load(path, tasks)
    log = os.path.join(folder, "profile.log")
    argv = [sys.executable, os.path.abspath(__file__), "--child", path, str(tasks)]
    with open(log, "w") as err, spawned(argv, stdout=subprocess.PIPE, stderr=err, text=True) as p:
        out, _ = p.communicate(timeout=TIMEOUT_S)
    if p.returncode != 0:
        raise RuntimeError(f"the profile child exited {p.returncode}:\n{tail(log)}")
    report = json.loads(out)
    if report["code"] != 0 or report["done"] != tasks:
        raise RuntimeError(f"the profile child ran {report['done']} of {tasks} tasks")
    total = report["seconds"]
    print(
        f"\nwhere one `--exec true` task's time goes: {tasks:,} tasks, runner in-process with "
        f"its phases timed ({tasks / total:,.0f} tasks/s with the timers on; "
        f"{report['processes']} processes on the machine); us and calls per task, exclusive"
    )
    rest = "the rest: the runner's loop, run ids, threads; register, deregister"
    print(
        table(["phase", "us", "calls", "share"], phase_rows(report["phases"], tasks, total, rest))
    )
    bare = report["bare"]
    rows = [[name, us(s / tasks)] for name, s in bare.items()]
    rows.append(["total", us(sum(bare.values()) / tasks)])
    print(f"\nthe bare loop, {tasks:,} runs of `true`, in the same process (us per run)")
    print(table(["phase", "us"], rows))
    if report["missing"]:
        print(f"(not found in the code, so not timed: {', '.join(report['missing'])})")


# -- main -----------------------------------------------------------------------------------


def main() -> int:
    """Alternate the bare loop and the runner, print the rates, check the target."""
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        print(dump(profile_child(sys.argv[2], int(sys.argv[3]))))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1_000, help="runs of `true` on each side")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="always show the phases")
    parser.add_argument("--profile-tasks", type=int, default=500)
    opts = parser.parse_args()
    banner("runner overhead: --exec true beside a bare subprocess loop", __doc__.split("\n\n")[1])
    v = Verdicts("runner_overhead")
    n = opts.tasks
    with temp_dir("overhead") as folder:
        reps = []
        for rep in range(opts.reps):
            sides: dict[str, Any] = {}
            for side in ("bare", "corral") if rep % 2 == 0 else ("corral", "bare"):
                if side == "bare":
                    sides[side] = bare_loop(n)
                else:
                    sides[side] = corral_runner(folder, f"bench-exec-{rep}", n)
            reps.append(sides)
        rows = []
        for i, r in enumerate(reps):
            (corral_s, startup_s), bare_s = r["corral"], r["bare"]
            rows.append(
                [
                    f"rep {i + 1}",
                    f"{n / bare_s:,.0f}",
                    f"{n / corral_s:,.0f}",
                    f"{bare_s / corral_s:.0%}",
                    f"{startup_s * 1000:.0f}",
                    f"{n / (corral_s - startup_s):,.0f}",
                ]
            )
        bare_rate = statistics.median(n / r["bare"] for r in reps)
        corral_rate = statistics.median(n / r["corral"][0] for r in reps)
        rows.append(["median", f"{bare_rate:,.0f}", f"{corral_rate:,.0f}"])
        rows[-1] += [f"{corral_rate / bare_rate:.0%}", "", ""]
        print(f"{n:,} runs of `true` (tasks/s)")
        headers = ["", "bare loop", "corral", "corral / bare", "start-up ms", "after start-up"]
        print(table(headers, rows))
        own_s = 1 / corral_rate - 1 / bare_rate
        v.check(
            "--exec true: corral's own time per task <= 3 ms",
            f"{own_s * 1000:.2f} ms ({corral_rate:,.0f} vs {bare_rate:,.0f} tasks/s)",
            own_s <= TARGET_S,
        )
        if v.missed() or opts.profile:
            profile(folder, opts.profile_tasks)
    return v.finish()


if __name__ == "__main__":
    sys.exit(main())
