"""The orchestrator with real processes: crashes, restarts, stops, takeovers, secrets.

Each test starts `corral orchestrator start` as a process over a temporary store, kills
what the scenario says with SIGKILL, and checks the store's record of what happened.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import re
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psutil
from tests.conftest import finished_run

from corral import EventFilter, FakeClock, NewWorker, TaskFilter, TaskStatus, open_store
from corral.foundation.process_keys import new_key
from corral.model.runs import RunOutcome
from corral.model.states import WorkerStatus
from corral.usecases.claims import claim
from corral.usecases.workers import register

# How much later than due a mark may come on a loaded machine, still far from the interval.
SLACK_S = 2.0


def _completions(pool: Any, task_id: str) -> int:
    events = pool.store.events.list_events(EventFilter(task_id=task_id, limit=1000))
    return sum(e.name == "task.completed" for e in events)


def _all_done(pool: Any) -> bool:
    return all(t.status is TaskStatus.DONE for t in pool.store.tasks.list_tasks(TaskFilter()))


def _busy_pid(pool: Any, task_id: str) -> int:
    task = pool.store.tasks.get_task(task_id)
    assert task.worker_id is not None
    pid = pool.store.workers.get_worker(task.worker_id).pid
    assert pid is not None
    return pid


def _marked(pool, run_id: str) -> list[Any]:
    """The pool's live processes marked with `run_id`."""
    found = []
    for proc in pool.processes():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("CORRAL_RUN_ID") == run_id:
                found.append(proc)
    return found


def _runs_never_overlap(pool: Any, task_id: str) -> bool:
    runs = sorted(pool.store.runs.list_runs(task_id=task_id, limit=100), key=lambda r: r.started_at)
    return all(
        a.finished_at is not None and a.finished_at <= b.started_at
        for a, b in itertools.pairwise(runs)
    )


def test_a_killed_busy_worker_is_restarted_and_its_task_done_exactly_once(pool: Any):
    """kill -9 of a busy worker: task requeued with a crash, worker restarted, task done once."""
    pool.env["AGENT_SLEEP_S"] = "1"
    (task_id,) = pool.add(1)
    orchestrator = pool.start(workers=1)
    pool.wait(lambda: pool.store.runs.list_runs(task_id=task_id, limit=10), 30)
    (first_run,) = pool.store.runs.list_runs(task_id=task_id, limit=10)
    pool.wait(lambda: _marked(pool, first_run.id), 30)  # its command runs
    victim = _busy_pid(pool, task_id)
    os.kill(victim, signal.SIGKILL)
    pool.wait(lambda: _all_done(pool), 30)

    task = pool.store.tasks.get_task(task_id)
    assert (2, 1) == (task.attempts, task.crashes)
    assert 1 == _completions(pool, task_id)
    assert _runs_never_overlap(pool, task_id)
    outcomes = [r.outcome for r in pool.store.runs.list_runs(task_id=task_id, limit=10)]
    assert RunOutcome.DONE in outcomes
    names = [e.name for e in pool.store.events.list_events(EventFilter(limit=1000))]
    assert "worker.dead" in names
    log = pool.log()
    assert f"worker.exited slot=slot-1 pid={victim} exit_code=-9" in log
    assert "worker.restart_scheduled slot=slot-1 delay_s=0.1 restarts=1" in log
    pool.wait(lambda: pool.status()["slots"][0]["restarts"] == 1, 10)
    assert -9 == pool.status()["slots"][0]["last_exit_code"]
    assert [] == _marked(pool, first_run.id)  # the killed worker's command was ended
    children = psutil.Process(orchestrator.pid).children()
    assert [] == [c.pid for c in children if c.status() == psutil.STATUS_ZOMBIE]
    assert orchestrator.poll() is None


def test_a_worker_that_exits_at_once_backs_off_then_its_slot_fails_and_is_replaced(pool: Any):
    """Immediate exits: delays double to the cap; past max_restarts the slot fails, then returns.

    The pool starts with a workdir that exists (a start refuses one that does not), which
    then goes: every later worker refuses to start (exit 2) once the first is killed.
    """
    pool.env["CORRAL_MAX_RESTARTS"] = "3"
    workdir = pool.folder / "gone"
    workdir.mkdir()
    orchestrator = pool.start("--workdir", str(workdir), workers=1)
    pool.wait_running(1)
    workdir.rmdir()
    os.kill(pool.status()["slots"][0]["pid"], signal.SIGKILL)
    pool.wait(lambda: "slot.replaced" in pool.log(), 30)
    delays = re.findall(r"worker\.restart_scheduled slot=slot-1 delay_s=([\d.]+)", pool.log())
    assert ["0.1", "0.2", "0.4"] == delays[:3]
    assert "slot.failed slot=slot-1 delay_s=0.4 restarts=4" in pool.log()
    assert "exit_code=2" in pool.log()  # the worker's own code: invalid input
    slot_log = (pool.folder / ".corral" / "logs" / "workers" / "slot-1.log").read_text()
    assert "corral: error: workdir: expected an existing folder" in slot_log
    assert orchestrator.poll() is None


def test_graceful_stop_lets_busy_workers_finish_and_leaves_nothing_running(pool: Any):
    """stop --graceful: running tasks finish, the orchestrator exits 0, no process is left."""
    pool.env["AGENT_SLEEP_S"] = "1.5"
    ids = pool.add(2)
    orchestrator = pool.start(workers=2)
    pool.wait(
        lambda: all(pool.store.tasks.get_task(t).status is TaskStatus.RUNNING for t in ids), 30
    )

    stopped = pool.corral("orchestrator", "stop", "--graceful", "--timeout", "30s")

    assert 0 == stopped.returncode, stopped.stderr
    assert 0 == orchestrator.wait(timeout=10)
    assert [TaskStatus.DONE, TaskStatus.DONE] == [pool.store.tasks.get_task(t).status for t in ids]
    assert "stopped" == pool.status()["status"]
    assert [] == pool.processes()
    assert not os.path.exists(os.path.join(pool.folder, ".corral", "orchestrator.pid"))
    assert [] == os.listdir(os.path.join(pool.folder, ".corral", "tmp"))


def test_a_new_orchestrator_adopts_live_workers_and_restarts_dead_ones(pool: Any):
    """kill -9 of the orchestrator: workers keep their tasks; the next one adopts or restarts."""
    pool.env["AGENT_SLEEP_S"] = "2"
    ids = pool.add(2)
    first = pool.start(workers=2)
    pool.wait(
        lambda: all(pool.store.tasks.get_task(t).status is TaskStatus.RUNNING for t in ids), 30
    )
    survivor, victim = _busy_pid(pool, ids[0]), _busy_pid(pool, ids[1])
    os.killpg(first.pid, signal.SIGKILL)
    first.wait()
    os.kill(victim, signal.SIGKILL)
    assert psutil.pid_exists(survivor)

    pool.start(workers=2)
    pool.wait(lambda: _all_done(pool), 30)

    log = pool.log(1)
    assert re.search(rf"worker\.adopted slot=slot-\d worker_id=\S+ pid={survivor}\n", log)
    assert "orchestrator.took_over" in log
    kept, retried = (pool.store.tasks.get_task(t) for t in ids)
    assert (1, 0) == (kept.attempts, kept.crashes)  # finished by the adopted worker
    assert (2, 1) == (retried.attempts, retried.crashes)
    for task_id in ids:
        assert 1 == _completions(pool, task_id)
        assert _runs_never_overlap(pool, task_id)


def test_a_second_orchestrator_on_the_same_store_is_refused(pool: Any):
    """While one runs, a second start exits 1 with one line naming the running one."""
    pool.start(workers=1)
    pool.wait_running(1)
    first = pool.store.orchestrators.get_orchestrator().last_reconcile_at
    pool.wait(
        lambda: pool.store.orchestrators.get_orchestrator().last_reconcile_at > first, 10
    )  # the loop
    second = pool.corral("orchestrator", "start", "--workers", "1", "--exec", str(pool.agent))
    first_pid = pool.status()["pid"]
    assert 1 == second.returncode
    lines = second.stderr.strip().splitlines()
    assert 1 == len(lines)
    assert f"pid {first_pid} on {os.uname().nodename}" in lines[0]


def test_workers_get_the_environment_without_secrets_but_with_allowed_names(pool: Any):
    """FOO_TOKEN is filtered out, an allowed MY_API_KEY passes, CORRAL_DB is set."""
    pool.env.update({"FOO_TOKEN": "x", "MY_API_KEY": "k", "CORRAL_ENV_ALLOW": "MY_API_KEY"})
    pool.start(workers=1)
    pool.wait_running(1)
    pid = pool.status()["slots"][0]["pid"]
    env = psutil.Process(pid).environ()
    assert "FOO_TOKEN" not in env
    assert "k" == env["MY_API_KEY"]
    assert pool.db == env["CORRAL_DB"]


def test_a_misspelt_variable_is_named_in_the_logs_of_the_pool_and_its_workers(pool: Any):
    """CORRAL_LEASE (for CORRAL_LEASE_S) changes nothing, so the orchestrator's log and
    each worker's say so at start, with the name it most looks like."""
    pool.env.update({"CORRAL_LEASE": "45m", "CORRAL_WIDGETS": "1"})
    pool.start(workers=1)
    pool.wait_running(1)
    slot_log = pool.folder / ".corral" / "logs" / "workers" / "slot-1.log"
    pool.wait(lambda: "worker.env_ignored" in slot_log.read_text(), 30)
    for source, log in (("orchestrator", pool.log()), ("worker", slot_log.read_text())):
        assert f"WARNING {source}.env_ignored name=CORRAL_LEASE meant=CORRAL_LEASE_S\n" in log
        assert f"WARNING {source}.env_ignored name=CORRAL_WIDGETS\n" in log


def test_a_daemon_detaches_and_is_seen_and_stopped_through_the_cli(pool: Any):
    """--daemon: pid file and log under .corral/; status, worker logs and stop work against it."""
    started = pool.corral(
        "orchestrator", "start", "--workers", "1", "--exec", str(pool.agent), "--daemon"
    )
    assert 0 == started.returncode, started.stderr
    pool.wait_running(1)
    corral_dir = os.path.join(pool.folder, ".corral")
    pid = pool.status()["pid"]
    with open(os.path.join(corral_dir, "orchestrator.pid")) as handle:
        assert str(pid) == handle.read().strip()
    assert f"pid {pid}" in started.stdout

    overview = pool.corral("status")
    assert 0 == overview.returncode
    assert "orchestrator: running" in overview.stdout
    assert "slot-1" in overview.stdout
    logs = pool.corral("worker", "logs", "slot-1")
    assert "worker.started" in logs.stdout
    worker_id = pool.status()["slots"][0]["worker_id"]
    follow = subprocess.Popen(
        [sys.executable, "-m", "corral.cli.main", "worker", "logs", worker_id, "--follow"],
        stdout=subprocess.PIPE,
        env=pool.env,
        text=True,
    )

    stopped = pool.corral("orchestrator", "stop")
    assert 0 == stopped.returncode, stopped.stderr
    followed, _ = follow.communicate(timeout=10)  # ends once the worker is offline
    assert (0, True) == (follow.returncode, "worker.stopped" in followed)
    assert "stopped" in pool.corral("status").stdout.splitlines()[0]
    assert "stopped" == pool.status()["status"]
    assert not os.path.exists(os.path.join(corral_dir, "orchestrator.pid"))
    with open(os.path.join(corral_dir, "logs", "orchestrator.log")) as handle:
        assert "orchestrator.stopped" in handle.read()
    pool.wait(lambda: [] == pool.processes(), 10)


def test_stop_without_a_running_orchestrator_is_refused_in_one_line(pool: Any):
    """Nothing to stop: exit 1 and one line."""
    result = pool.corral("orchestrator", "stop")
    assert (1, 1) == (result.returncode, len(result.stderr.strip().splitlines()))
    assert "no orchestrator is running" in result.stderr


def test_a_stop_without_grace_gives_running_tasks_back_at_once(pool: Any):
    """stop (not --graceful): a long task goes back to ready uncounted; nothing is left running."""
    pool.env["AGENT_SLEEP_S"] = "30"
    (task_id,) = pool.add(1)
    orchestrator = pool.start(workers=1)
    pool.wait(lambda: pool.store.tasks.get_task(task_id).status is TaskStatus.RUNNING, 30)

    stopped = pool.corral("orchestrator", "stop")

    assert 0 == stopped.returncode, stopped.stderr
    assert 0 == orchestrator.wait(timeout=10)
    task = pool.store.tasks.get_task(task_id)
    assert (TaskStatus.READY, 0) == (task.status, task.crashes), pool.log()
    assert "worker.sigquit slot=slot-1" in pool.log()
    assert [] == pool.processes()


def test_bad_pool_flags_are_usage_errors_in_one_line(pool: Any):
    """No command to run, or zero workers: exit 2 naming the field; nothing starts."""
    no_exec = pool.corral("orchestrator", "start", "--workers", "1")
    zero = pool.corral("orchestrator", "start", "--workers", "0", "--exec", str(pool.agent))
    assert (2, 2) == (no_exec.returncode, zero.returncode)
    assert no_exec.stderr.startswith("corral: error: exec: expected")
    assert zero.stderr.startswith("corral: error: workers: expected")
    assert "stopped" == pool.status()["status"]


def test_the_start_up_pass_repairs_what_was_left_without_waiting_for_the_interval(pool: Any):
    """A worker silent for an hour is declared dead at start, with reconcile_interval an hour."""
    pool.env["CORRAL_RECONCILE_INTERVAL_S"] = "3600"
    an_hour_ago = FakeClock(datetime.now(UTC) - timedelta(hours=1))
    with open_store(pool.db, clock=an_hour_ago) as past:
        lost = register(past, NewWorker(name="lost")).worker
    pool.start(workers=1)
    pool.wait(lambda: pool.store.workers.get_worker(lost.id).status is WorkerStatus.DEAD, 10)


def test_sigquit_after_sigterm_cuts_the_grace_short(pool: Any):
    """SIGTERM waits for a 30 s task; a SIGQUIT then gives it back at once and the pool stops."""
    pool.env["AGENT_SLEEP_S"] = "30"
    (task_id,) = pool.add(1)
    orchestrator = pool.start(workers=1)
    pool.wait(lambda: pool.store.tasks.get_task(task_id).status is TaskStatus.RUNNING, 30)
    orchestrator.send_signal(signal.SIGTERM)
    pool.wait(lambda: "worker.sigterm" in pool.log(), 10)
    orchestrator.send_signal(signal.SIGQUIT)

    assert 0 == orchestrator.wait(timeout=10)
    assert TaskStatus.READY == pool.store.tasks.get_task(task_id).status
    assert "worker.sigquit" in pool.log()


def test_a_leader_keeps_reconciling_while_its_pool_drains(pool: Any):
    """During a graceful stop's grace, a worker silent for an hour is still declared dead."""
    pool.env["AGENT_SLEEP_S"] = "30"
    (task_id,) = pool.add(1)
    orchestrator = pool.start(workers=1)
    pool.wait(lambda: pool.store.tasks.get_task(task_id).status is TaskStatus.RUNNING, 30)
    orchestrator.send_signal(signal.SIGTERM)
    pool.wait(lambda: "worker.sigterm" in pool.log(), 10)
    an_hour_ago = FakeClock(datetime.now(UTC) - timedelta(hours=1))
    with open_store(pool.db, clock=an_hour_ago) as past:
        lost = register(past, NewWorker(name="lost")).worker

    pool.wait(lambda: pool.store.workers.get_worker(lost.id).status is WorkerStatus.DEAD, 10)

    assert orchestrator.poll() is None  # still draining its 30 s task
    orchestrator.send_signal(signal.SIGQUIT)
    assert 0 == orchestrator.wait(timeout=10)


def test_a_daemon_that_cannot_start_says_why_in_one_line(pool: Any):
    """--daemon beside a running orchestrator: exit 1 with the child's reason."""
    pool.start(workers=1)
    pool.wait_running(1)
    second = pool.corral(
        "orchestrator", "start", "--workers", "1", "--exec", str(pool.agent), "--daemon"
    )
    assert 1 == second.returncode
    assert 1 == len(second.stderr.strip().splitlines())
    reason = "exited at once: an orchestrator is already running on this store"
    assert f"{reason} (pid {pool.status()['pid']}" in second.stderr


def test_processes_left_by_runs_that_are_over_are_shown_then_ended(pool: Any):
    """A process of a finished run, holding the runs key its worker recorded: `status`
    lists it, start ends it."""
    key = new_key()
    run_id = finished_run(pool.db, key)
    marked = {**pool.env, "CORRAL_RUN_ID": run_id, "CORRAL_RUN_KEY": key}
    stray = subprocess.Popen(["sleep", "60"], env=marked, start_new_session=True)
    try:
        status = pool.corral("status")
        assert f"pid {stray.pid} (run {run_id})" in status.stdout
        pool.start(workers=1)
        assert -signal.SIGTERM == stray.wait(timeout=10)
        ended = f"run.leftover_ended pid={stray.pid} run_id={run_id}"
        pool.wait(lambda: ended in pool.log(), 10)
        after = pool.corral("status", "--json")
        assert [] == json.loads(after.stdout)["leftovers"]
    finally:
        if stray.poll() is None:
            stray.kill()
            stray.wait()


def test_start_writes_the_configured_queue_limits_and_status_shows_them(pool: Any):
    """[queues.api] in config.toml is in force once the orchestrator holds the store, and
    `corral status` shows the queue held back at max_running."""
    (pool.folder / ".corral" / "config.toml").write_text("[queues.api]\nmax_running = 1\n")
    pool.env["AGENT_SLEEP_S"] = "30"
    pool.add(3, queue="api")
    pool.start(workers=2)
    pool.wait(lambda: bool(pool.store.queues.queue_stats("api")[0].limits.max_running), 15)
    pool.wait(lambda: pool.store.queues.queue_stats("api")[0].running == 1, 15)
    overview = json.loads(pool.corral("status", "--json").stdout)
    [api] = overview["queues"]
    assert (1, 2, "at max_running (1 of 1 running)") == (api["running"], api["ready"], api["held"])
    assert "HELD BACK" in pool.corral("status").stdout


def test_the_reconcile_loop_removes_temporary_directories_of_dead_workers(pool: Any):
    """A worker killed with SIGKILL leaves tmp/NAME.PID behind; the orchestrator's pass
    removes it, as `corral reconcile` does."""
    left = pool.folder / ".corral" / "tmp" / f"gone.{2**22 + 1}"  # above Linux's pid_max
    left.mkdir(parents=True)
    pool.start(workers=1)
    pool.wait(lambda: not left.exists(), 15)


def test_a_silent_worker_is_stale_and_dead_when_due_not_at_the_next_interval(pool: Any):
    """reconcile_interval an hour, heartbeats every second: a worker (a bash loop's, say)
    that falls silent holding a task is stale once a heartbeat is half a second late and
    dead, its task ready, at three missed: the leader wakes its repair when it is due
    (seed 002: detection 10 s after the last heartbeat at its 10 s interval)."""
    pool.env.update(
        CORRAL_RECONCILE_INTERVAL_S="3600",
        CORRAL_HEARTBEAT_INTERVAL_S="1",
        CORRAL_DEAD_AFTER_MISSED="3",
    )
    pool.start("--kind", "pool-only", workers=1)
    pool.wait_running(1)
    (task_id,) = pool.add(1, kind="by-hand")  # the pool's worker runs pool-only alone
    heard = time.monotonic()  # at most when the registration, its last heartbeat, was
    silent = register(pool.store, NewWorker(name="silent", kinds=("by-hand",))).worker
    claim(pool.store, task_id, silent.id)

    def status_at(wanted: WorkerStatus) -> float:
        pool.wait(lambda: pool.store.workers.get_worker(silent.id).status is wanted, 20)
        return time.monotonic() - heard

    stale_s, dead_s = status_at(WorkerStatus.STALE), status_at(WorkerStatus.DEAD)
    pool.wait(lambda: pool.store.tasks.get_task(task_id).status is TaskStatus.READY, 5)
    assert 1.5 <= stale_s < 1.5 + SLACK_S
    assert 3.5 <= dead_s < 3.5 + SLACK_S


def test_a_healthy_pool_runs_no_pass_between_intervals(pool: Any):
    """Workers that heartbeat on time move the repair's next due time on; asking for it
    writes nothing and runs no pass: the last reconcile stays the start-up one."""
    pool.env["CORRAL_RECONCILE_INTERVAL_S"] = "3600"
    pool.start(workers=2)
    pool.wait_running(2)
    first = pool.store.orchestrators.get_orchestrator().last_reconcile_at
    assert first is not None
    time.sleep(2)  # what is measured is that nothing happens: ten heartbeats of each worker
    assert first == pool.store.orchestrators.get_orchestrator().last_reconcile_at
    names = [e.name for e in pool.store.events.list_events(EventFilter())]
    assert "worker.stale" not in names
