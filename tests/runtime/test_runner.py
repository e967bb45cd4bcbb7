"""The worker runner as users run it: `corral worker start` in a real process, real signals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
from tests.conftest import CORRAL, allowing
from tests.runtime.conftest import freeze_outside_a_write, wait_until

import corral
from corral import EventFilter, NewTask, Store, TaskFilter, TaskStatus, open_store
from corral.model.runs import RunOutcome

BIN = str(Path(CORRAL).parent)


class Harness:
    """A store in a temporary folder, and runners started against it."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.db = str(tmp_path / ".corral" / "corral.db")
        (tmp_path / ".corral").mkdir(exist_ok=True)  # a tmpfs may be mounted there
        self.store: Store = open_store(self.db)
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")},
            "CORRAL_DB": self.db,
            "CORRAL_HEARTBEAT_INTERVAL_S": "0.2",
            "CORRAL_RETRY_BASE_S": "0",
            "PATH": f"{BIN}:{os.environ['PATH']}",
        }
        self.procs: list[subprocess.Popen[bytes]] = []

    def add(self, title: str = "a task", **fields: object) -> str:
        """Enqueue a task; its id."""
        spec = NewTask(title=title, **fields)  # type: ignore[arg-type]
        return corral.enqueue(self.store, spec, settings=corral.Settings(retry_base_s=0)).id

    def script(self, name: str, body: str) -> str:
        """An executable bash script in the temporary folder."""
        path = self.tmp / name
        path.write_text("#!/usr/bin/env bash\n" + body)
        path.chmod(0o755)
        return str(path)

    def start(self, *args: str, name: str = "w1") -> subprocess.Popen[bytes]:
        """`corral worker start --name NAME ARGS...` in its own session, its tasks allowed
        the variables the test set (tests.conftest.allowing)."""
        added = {k: v for k, v in self.env.items() if os.environ.get(k) != v}
        with open(
            self.tmp / f"{name}-{len(self.procs)}.log", "wb"
        ) as log:  # the child keeps its own
            proc = subprocess.Popen(
                [CORRAL, "worker", "start", "--name", name, *args],
                env={**self.env, **allowing(added)},
                cwd=self.tmp,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)
        return proc

    def log_has(self, text: str) -> bool:
        """True once some runner's log contains `text`."""
        return any(text in p.read_text(errors="replace") for p in self.tmp.glob("*.log"))

    def task(self, task_id: str) -> corral.Task:
        """The task as the store has it now."""
        return self.store.tasks.get_task(task_id)

    def runs(self, task_id: str) -> list[corral.Run]:
        """The task's runs, oldest first."""
        return list(reversed(self.store.runs.list_runs(task_id=task_id)))

    def wait_running(self, task_id: str, *, launched: bool = False) -> corral.Run:
        """Wait until the task has an unfinished run (with `launched`, one that started its
        command: launch.py); that run."""

        def running() -> list[corral.Run]:
            return [
                r
                for r in self.runs(task_id)
                if r.finished_at is None and (r.last_progress_at is not None or not launched)
            ]

        wait_until(lambda: bool(running()), 10)
        return running()[0]

    def close(self) -> None:
        """Kill every runner and every task process they left, then close the store."""
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        for run in self.store.runs.list_runs(limit=1000):
            _kill_run_processes(run.id)
        self.store.close()


def _processes_of_run(run_id: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter():
        try:
            if (
                proc.environ().get("CORRAL_RUN_ID") == run_id
                and proc.status() != psutil.STATUS_ZOMBIE
            ):
                found.append(proc)
        except psutil.Error:
            continue
    return found


def _kill_run_processes(run_id: str) -> None:
    for proc in _processes_of_run(run_id):
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            continue  # ended between the scan and the kill


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    """A harness whose processes are all gone after the test."""
    harness = Harness(tmp_path)
    yield harness
    harness.close()


def _events(store: Store, task_id: str) -> list[str]:
    return [e.name for e in store.events.list_events(EventFilter(task_id=task_id, limit=500))]


def test_a_command_gets_the_prompt_and_environment_and_its_output_is_captured(h: Harness) -> None:
    """The prompt arrives on stdin, CORRAL_* variables are set, output lands in the run's files."""
    agent = h.script(
        "agent.sh",
        "prompt=$(cat)\n"
        'jq -n -c --arg p "$prompt" \'{prompt: $p, task: env.CORRAL_TASK_ID,'
        " worker: env.CORRAL_WORKER_ID, run: env.CORRAL_RUN_ID,"
        " token: env.CORRAL_CLAIM_TOKEN, db: env.CORRAL_DB}'\n"
        'echo "to stderr" >&2\n',
    )
    task_id = h.add("Write the docs", payload={"instructions": "be brief"})
    assert 0 == h.start("--exec", agent, "--once").wait(30)
    run = h.runs(task_id)[0]
    seen = json.loads(Path(run.transcript_path or "").read_text())
    claim_token = h.store.events.list_events(EventFilter(task_id=task_id, limit=50))[1].token
    assert (task_id, run.worker_id, run.id, str(claim_token), h.db) == (
        seen["task"],
        seen["worker"],
        seen["run"],
        seen["token"],
        seen["db"],
    )
    assert "Title: Write the docs" in seen["prompt"] and "be brief" in seen["prompt"]
    assert (run.prompt or "").rstrip("\n") == seen["prompt"]  # $(cat) drops the last newline
    assert "to stderr\n" == Path(run.stderr_path or "").read_text()
    assert (TaskStatus.DONE, RunOutcome.DONE, 0) == (
        h.task(task_id).status,
        run.outcome,
        run.exit_code,
    )


def test_a_failing_command_fails_the_task_with_its_stderr_and_once_exits_1(h: Harness) -> None:
    """A non-zero exit fails the run; the task's error is the tail of stderr; --once exits 1."""
    agent = h.script("fail.sh", 'echo "compiler said no" >&2\nexit 4\n')
    task_id = h.add()
    assert 1 == h.start("--exec", agent, "--once").wait(30)
    task = h.task(task_id)
    assert (TaskStatus.READY, 1) == (task.status, task.attempts)
    assert "exited with status 4: compiler said no" == task.last_error
    assert RunOutcome.FAILED == h.runs(task_id)[0].outcome


def test_exit_status_75_defers_the_task_without_counting_an_attempt(h: Harness) -> None:
    """Exit 75 returns the task to ready after the defer delay, attempts unchanged."""
    task_id = h.add()
    assert 0 == h.start(
        "--exec", h.script("later.sh", "exit 75\n"), "--once", "--defer-delay", "1h"
    ).wait(30)
    task = h.task(task_id)
    assert (TaskStatus.READY, 0) == (task.status, task.attempts)
    assert task.run_after > h.store.now()
    assert RunOutcome.DEFERRED == h.runs(task_id)[0].outcome
    assert "task.deferred" in _events(h.store, task_id)


def test_an_agent_that_reports_done_itself_is_completed_once(h: Harness) -> None:
    """`corral done` from inside the task (fenced by its token) and exit 0 complete it once."""
    agent = h.script(
        "self.sh", 'corral done "$CORRAL_TASK_ID" --result \'"by the agent"\' >/dev/null\n'
    )
    task_id = h.add()
    assert 0 == h.start("--exec", agent, "--once").wait(30)
    task = h.task(task_id)
    assert (TaskStatus.DONE, "by the agent") == (task.status, task.result)
    assert 1 == _events(h.store, task_id).count("task.completed")
    assert RunOutcome.DONE == h.runs(task_id)[0].outcome


def test_sigterm_mid_task_lets_it_finish_then_the_worker_deregisters_and_exits_0(
    h: Harness,
) -> None:
    """Graceful shutdown: no new claims, the running task completes, the worker goes offline."""
    gate = h.tmp / "gate"
    agent = h.script("wait.sh", f'while [ ! -e "{gate}" ]; do sleep 0.02; done\n')
    first, second = h.add("first"), h.add("second")
    runner = h.start("--exec", agent)
    run = h.wait_running(first)
    runner.send_signal(signal.SIGTERM)
    wait_until(lambda: h.log_has("worker.signal"), 10)  # Python runs handlers in its main thread
    gate.touch()
    assert 0 == runner.wait(30)
    assert (TaskStatus.DONE, TaskStatus.READY) == (h.task(first).status, h.task(second).status)
    assert corral.WorkerStatus.OFFLINE == h.store.workers.get_worker(run.worker_id).status


def test_a_second_signal_stops_the_task_now_and_releases_its_claim(h: Harness) -> None:
    """Two SIGINTs: the task's process tree is killed, its claim released uncounted, exit 0."""
    task_id = h.add()
    runner = h.start("--exec", h.script("hang.sh", "sleep 300\n"))
    run = h.wait_running(task_id)
    runner.send_signal(signal.SIGINT)
    wait_until(lambda: h.log_has("worker.signal"), 10)  # signals sent at once can merge into one
    runner.send_signal(signal.SIGINT)
    assert 0 == runner.wait(30)
    task = h.task(task_id)
    assert (TaskStatus.READY, 0) == (task.status, task.attempts)
    assert RunOutcome.SHUTDOWN == h.store.runs.get_run(run.id).outcome
    assert [] == _processes_of_run(run.id)


def test_sigkill_of_the_runner_returns_its_task_after_a_reconcile_pass_with_a_crash(
    h: Harness,
) -> None:
    """A SIGKILLed runner's claim expires as a crash at the next reconcile; its run ends killed."""
    task_id = h.add()
    runner = h.start("--exec", h.script("hang.sh", "sleep 300\n"))
    run = h.wait_running(task_id, launched=True)
    runner.kill()
    runner.wait()
    settings = corral.Settings(heartbeat_interval_s=0.2, retry_base_s=0)

    def recovered() -> bool:
        return corral.reconcile_once(h.store, settings=settings).crashes == 1

    wait_until(recovered, 10, interval_s=0.1)
    task = h.task(task_id)
    assert (TaskStatus.READY, 1, 1) == (task.status, task.attempts, task.crashes)
    assert corral.WorkerStatus.DEAD == h.store.workers.get_worker(run.worker_id).status
    assert RunOutcome.KILLED == h.store.runs.get_run(run.id).outcome  # so `logs --follow` ends


def test_a_runner_restarted_under_a_dead_name_releases_the_old_claims_at_once(h: Harness) -> None:
    """Crash recovery: a new incarnation expires its dead predecessor's claim, then retakes it."""
    gate = h.tmp / "gate"
    agent = h.script("wait.sh", f'while [ ! -e "{gate}" ]; do sleep 0.02; done\n')
    task_id = h.add()
    first = h.start("--exec", agent)
    old = h.wait_running(task_id)
    first.kill()
    first.wait()
    _kill_run_processes(old.id)
    gate.touch()
    assert 0 == h.start("--exec", agent, "--once").wait(30)
    task = h.task(task_id)
    assert (TaskStatus.DONE, 1) == (task.status, task.crashes)
    assert corral.WorkerStatus.DEAD == h.store.workers.get_worker(old.worker_id).status


def test_a_timeout_kills_the_whole_process_tree_and_fails_the_run(h: Harness) -> None:
    """Past its timeout a task's command, its children and a setsid'd grandchild are all ended."""
    agent = h.script("tree.sh", "sleep 300 &\nsetsid sleep 300 &\nsleep 300\n")
    task_id = h.add(timeout_s=0.5)
    assert 1 == h.start("--exec", agent, "--once", "--grace", "0.2").wait(30)
    run = h.runs(task_id)[0]
    assert (RunOutcome.TIMEOUT, []) == (run.outcome, _processes_of_run(run.id))
    assert (h.task(task_id).last_error or "").startswith("timed out after 0.5 s")


def test_the_token_of_a_timed_out_run_is_refused_once_the_task_is_claimed_again(h: Harness) -> None:
    """Fencing across a timeout: the old run's token cannot complete the re-claimed task."""
    task_id = h.add(timeout_s=0.3)
    assert 1 == h.start(
        "--exec", h.script("slow.sh", "sleep 300\n"), "--once", "--grace", "0.1"
    ).wait(30)
    old_token = h.runs(task_id)[0].token
    worker = corral.register(h.store, corral.NewWorker(name="other")).worker
    corral.claim(h.store, task_id, worker.id)
    done = subprocess.run(
        [CORRAL, "done", task_id, "--token", str(old_token)],
        env=h.env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (1, TaskStatus.RUNNING) == (done.returncode, h.task(task_id).status)
    assert "stale" in done.stderr


def test_cancelling_a_running_task_stops_its_command(h: Harness) -> None:
    """The heartbeat notices the claim is gone and the runner ends the command (lease lost)."""
    task_id = h.add()
    runner = h.start("--exec", h.script("hang.sh", "sleep 300\n"))
    run = h.wait_running(task_id)
    corral.cancel(h.store, task_id)
    wait_until(lambda: h.store.runs.get_run(run.id).finished_at is not None, 10)
    assert RunOutcome.LEASE_LOST == h.store.runs.get_run(run.id).outcome
    assert [] == _processes_of_run(run.id)
    runner.send_signal(signal.SIGTERM)
    assert 0 == runner.wait(30)


def test_a_drained_runner_finishes_and_exits_0(h: Harness) -> None:
    """`corral worker drain` through the store: the idle runner deregisters and exits."""
    runner = h.start("--exec", h.script("ok.sh", "true\n"))
    wait_until(lambda: bool(h.store.workers.list_workers((corral.WorkerStatus.IDLE,))), 10)
    worker = h.store.workers.list_workers((corral.WorkerStatus.IDLE,))[0]
    corral.drain(h.store, worker.id)
    assert 0 == runner.wait(30)
    assert corral.WorkerStatus.OFFLINE == h.store.workers.get_worker(worker.id).status


def test_a_silent_command_is_flagged_stalled_and_killed_with_kill_stalled(h: Harness) -> None:
    """No output for the stall timeout: a run.waiting event, and the run ends as stalled."""
    task_id = h.add()
    runner = h.start(
        "--exec",
        h.script("quiet.sh", "sleep 300\n"),
        "--once",
        "--stall-timeout",
        "0.3",
        "--kill-stalled",
        "--grace",
        "0.1",
    )
    assert 1 == runner.wait(30)
    assert RunOutcome.STALLED == h.runs(task_id)[0].outcome
    assert "run.waiting" in _events(h.store, task_id)


def test_worker_stop_sends_sigquit_and_the_task_is_released(h: Harness) -> None:
    """`corral worker stop ID` stops the runner now; its task goes back to the queue."""
    task_id = h.add()
    runner = h.start("--exec", h.script("hang.sh", "sleep 300\n"))
    run = h.wait_running(task_id)
    stop = subprocess.run(
        [CORRAL, "worker", "stop", run.worker_id], env=h.env, capture_output=True, check=False
    )
    assert 0 == stop.returncode
    assert 0 == runner.wait(30)
    assert (TaskStatus.READY, 0) == (h.task(task_id).status, h.task(task_id).attempts)


def test_a_missing_command_is_exit_2_and_registers_nothing(h: Harness) -> None:
    """`--exec` naming no program fails at start with exit 2 (invalid input), as a pool does."""
    proc = h.start("--exec", "no-such-agent --flag")
    assert 2 == proc.wait(30)
    assert [] == h.store.workers.list_workers()


def test_a_python_execute_that_raises_fails_its_task_and_the_runner_goes_on(h: Harness) -> None:
    """run_worker: an exception fails that task with its message; the next task still runs."""
    bad, good = h.add("bad", retry_base_s=60.0), h.add("good")
    seen: list[str] = []

    def execute(task: corral.Task, ctx: object) -> dict[str, object]:
        seen.append(task.title)
        if task.title == "bad":
            raise ValueError("boom")
        return {"success": True, "output": {"greeting": ctx.greeting}}  # type: ignore[attr-defined]

    code = corral.run_worker(
        execute,
        db=h.db,
        max_tasks=2,
        context={"greeting": "hi"},
        settings=corral.Settings(heartbeat_interval_s=0.2, retry_base_s=60),
    )
    assert (0, ["bad", "good"]) == (code, seen)
    assert ("ValueError: boom", TaskStatus.READY) == (h.task(bad).last_error, h.task(bad).status)
    assert {"greeting": "hi"} == h.task(good).result
    done = h.store.tasks.list_tasks(TaskFilter(statuses=(TaskStatus.DONE,)))
    assert [good] == [t.id for t in done]


def test_the_python_api_records_its_version_and_labels_and_refuses_bad_ones(h: Harness) -> None:
    h.add()
    code = corral.run_worker(
        lambda t, c: None, db=h.db, once=True, version="9.1", labels={"gpu": "a100"}
    )
    assert 0 == code
    (worker,) = h.store.workers.list_workers()
    assert ("9.1", {"gpu": "a100"}) == (worker.version, worker.labels)
    for bad in ({"gpu": 1}, ["gpu=a100"], {"": "x"}):
        with pytest.raises(corral.InvalidInput, match=r"^labels: expected a dict of text keys"):
            corral.run_worker(lambda t, c: None, db=h.db, once=True, labels=bad)  # type: ignore[arg-type]


def test_the_python_api_runs_in_a_plain_interpreter(h: Harness) -> None:
    """`from corral import run_worker` in a fresh process drains a task and exits 0."""
    task_id = h.add()
    code = "import corral, sys; sys.exit(corral.run_worker(lambda t, c: None, once=True))"
    assert 0 == subprocess.run([sys.executable, "-c", code], env=h.env, check=False).returncode
    assert TaskStatus.DONE == h.task(task_id).status


def test_concurrency_runs_several_tasks_at_once_under_one_worker(h: Harness) -> None:
    """`--concurrency 2`: two tasks run side by side, both under the same worker."""
    gate = h.tmp / "gate"
    agent = h.script("wait.sh", f'while [ ! -e "{gate}" ]; do sleep 0.02; done\n')
    first, second = h.add("first"), h.add("second")
    runner = h.start("--exec", agent, "--concurrency", "2", "--max-tasks", "2")
    a, b = h.wait_running(first), h.wait_running(second)
    assert a.worker_id == b.worker_id
    gate.touch()
    assert 0 == runner.wait(30)
    assert [TaskStatus.DONE, TaskStatus.DONE] == [h.task(first).status, h.task(second).status]


def test_a_cpu_bound_python_task_does_not_make_its_worker_look_dead(h: Harness) -> None:
    """Liveness comes from the runner's heartbeat thread: a busy task keeps its lease."""
    task_id = h.add()
    code = (
        "import corral, sys, time\n"
        "def spin(task, ctx):\n"
        "    end = time.monotonic() + 2.0\n"
        "    while time.monotonic() < end:\n"
        "        sum(i * i for i in range(1000))\n"
        "sys.exit(corral.run_worker(spin, once=True))\n"
    )
    worker = subprocess.Popen([sys.executable, "-c", code], env=h.env)
    h.procs.append(worker)
    settings = corral.Settings(heartbeat_interval_s=0.2, dead_after_missed=3)
    run = h.wait_running(task_id)
    while worker.poll() is None:  # reconcile all along, as the orchestrator would
        corral.reconcile_once(h.store, settings=settings)
    assert 0 == worker.returncode
    assert (TaskStatus.DONE, 0) == (h.task(task_id).status, h.task(task_id).crashes)
    names = [
        e.name for e in h.store.events.list_events(EventFilter(worker_id=run.worker_id, limit=500))
    ]
    assert "worker.dead" not in names


def test_a_command_killed_from_outside_is_recorded_as_killed(h: Harness) -> None:
    """A task process ended by a signal it did not ask for (an OOM kill, say) fails as killed."""
    task_id = h.add()
    assert 1 == h.start("--exec", h.script("oom.sh", "kill -9 $$\n"), "--once").wait(30)
    run = h.runs(task_id)[0]
    assert (RunOutcome.KILLED, -9) == (run.outcome, run.exit_code)
    assert TaskStatus.READY == h.task(task_id).status


def test_worker_start_call_runs_a_python_function_by_name(h: Harness) -> None:
    """`--call module:function` imports the function and runs each task through it."""
    (h.tmp / "handlers.py").write_text(
        "def handle(task, ctx):\n    return {'success': True, 'output': task.title.upper()}\n"
    )
    task_id = h.add("shout")
    h.env["PYTHONPATH"] = str(h.tmp)
    assert 0 == h.start("--call", "handlers:handle", "--once").wait(30)
    assert (TaskStatus.DONE, "SHOUT") == (h.task(task_id).status, h.task(task_id).result)


def test_a_runner_started_by_the_console_script_collects_garbage(h: Harness) -> None:
    """The `corral` script turns the collector off for short commands; a runner lives long
    and turns it back on (cycles its tasks make are freed)."""
    (h.tmp / "gc_probe.py").write_text(
        "import gc\n\n"
        "def handle(task, ctx):\n    return {'success': True, 'output': gc.isenabled()}\n"
    )
    task_id = h.add("probe")
    h.env["PYTHONPATH"] = str(h.tmp)
    assert 0 == h.start("--call", "gc_probe:handle", "--once").wait(30)
    assert True is h.task(task_id).result


def test_worker_start_call_with_a_bad_target_is_exit_2(h: Harness) -> None:
    """An unimportable --call target is a one-line usage error before anything registers."""
    assert 2 == h.start("--call", "no_such_module:handle").wait(30)
    assert [] == h.store.workers.list_workers()


def test_a_task_that_cannot_start_fails_alone_and_the_runner_goes_on(h: Harness) -> None:
    """A task whose working directory does not exist fails with a clear error; the next one runs."""
    broken = h.add("broken", payload={"workdir": str(h.tmp / "missing")}, retry_base_s=60.0)
    fine = h.add("fine")
    assert 0 == h.start("--exec", h.script("ok.sh", "true\n"), "--max-tasks", "2").wait(30)
    assert TaskStatus.DONE == h.task(fine).status
    failed = h.task(broken)
    assert (TaskStatus.READY, 1) == (failed.status, failed.attempts)
    assert "missing" in (failed.last_error or "")
    assert RunOutcome.FAILED == h.runs(broken)[0].outcome


def test_a_restarted_runner_ends_the_command_its_dead_incarnation_left_running(
    h: Harness,
) -> None:
    """Restart by name: the old run's processes (found by CORRAL_RUN_ID) are ended, not orphaned."""
    task_id = h.add()
    first = h.start("--exec", h.script("hang.sh", "sleep 300\n"))
    old = h.wait_running(task_id)
    wait_until(lambda: bool(_processes_of_run(old.id)), 10)
    first.kill()
    first.wait()
    second = h.start("--exec", h.script("ok.sh", "true\n"), "--once")
    assert 0 == second.wait(30)
    assert [] == _processes_of_run(old.id)
    assert RunOutcome.KILLED == h.store.runs.get_run(old.id).outcome


def test_an_agent_that_defers_itself_gives_a_deferred_run_and_exit_0(h: Harness) -> None:
    """`corral defer` from inside the task, then exit 0: the run says deferred, not lease lost."""
    agent = h.script("defer.sh", 'corral defer "$CORRAL_TASK_ID" --until 1h >/dev/null\n')
    task_id = h.add()
    assert 0 == h.start("--exec", agent, "--once").wait(30)
    assert RunOutcome.DEFERRED == h.runs(task_id)[0].outcome
    assert (TaskStatus.READY, 0) == (h.task(task_id).status, h.task(task_id).attempts)


def test_a_runner_deregistered_from_outside_stops_cleanly(h: Harness) -> None:
    """`corral worker deregister` on a running idle runner: it stops claiming and exits 0."""
    runner = h.start("--exec", h.script("ok.sh", "true\n"))
    wait_until(lambda: bool(h.store.workers.list_workers((corral.WorkerStatus.IDLE,))), 10)
    worker = h.store.workers.list_workers((corral.WorkerStatus.IDLE,))[0]
    corral.deregister(h.store, worker.id)
    assert 0 == runner.wait(30)
    assert not h.log_has("Traceback")


def test_sighup_is_a_graceful_stop(h: Harness) -> None:
    """Closing the terminal (SIGHUP) deregisters the worker and exits 0."""
    runner = h.start("--exec", h.script("ok.sh", "true\n"))
    wait_until(lambda: bool(h.store.workers.list_workers((corral.WorkerStatus.IDLE,))), 10)
    worker = h.store.workers.list_workers((corral.WorkerStatus.IDLE,))[0]
    runner.send_signal(signal.SIGHUP)
    assert 0 == runner.wait(30)
    assert corral.WorkerStatus.OFFLINE == h.store.workers.get_worker(worker.id).status


def test_relative_exec_and_db_work_for_tasks_in_other_directories(h: Harness) -> None:
    """`--exec ./agent.sh --db .corral/corral.db` still work when a task's workdir is elsewhere."""
    elsewhere = h.tmp / "elsewhere"
    elsewhere.mkdir()
    h.script("agent.sh", 'corral done "$CORRAL_TASK_ID" >/dev/null\n')
    task_id = h.add(payload={"workdir": str(elsewhere)})
    del h.env["CORRAL_DB"]
    assert 0 == h.start("--exec", "./agent.sh", "--db", ".corral/corral.db", "--once").wait(30)
    assert TaskStatus.DONE == h.task(task_id).status


def test_an_empty_exec_is_a_usage_error(h: Harness) -> None:
    """`--exec ''` is refused with exit 2 and no traceback."""
    assert 2 == h.start("--exec", "").wait(30)
    assert not h.log_has("Traceback")


def test_output_after_a_stall_clears_the_stall_flag(h: Harness) -> None:
    """A command that goes quiet, then speaks again, is no longer shown as stalled."""
    agent = h.script("pause.sh", "echo start\nsleep 0.6\necho again\nsleep 0.1\n")
    task_id = h.add()
    assert 0 == h.start("--exec", agent, "--once", "--stall-timeout", "0.2").wait(30)
    assert "run.waiting" in _events(h.store, task_id)
    assert None is h.runs(task_id)[0].stalled_at


def test_a_runner_declared_dead_while_frozen_stops_its_task_without_a_traceback(
    h: Harness,
) -> None:
    """Frozen past the dead window, reconciled, resumed: the run stays killed, its processes
    end, and the runner registers a new worker instead of exiting."""
    task_id = h.add()
    runner = h.start("--exec", h.script("hang.sh", "sleep 300\n"))
    run = h.wait_running(task_id)
    # Launched, not only claimed: frozen before its launch, the run would rightly end as
    # lease_lost ("not started"), not killed.
    wait_until(lambda: h.store.runs.get_run(run.id).last_progress_at is not None, 10)
    freeze_outside_a_write(runner, h.db)
    settings = corral.Settings(heartbeat_interval_s=0.2)
    try:
        wait_until(
            lambda: corral.reconcile_once(h.store, settings=settings).workers_dead == 1, 10, 0.1
        )
    finally:
        runner.send_signal(signal.SIGCONT)
    wait_until(lambda: len(h.store.workers.list_workers()) == 2, 10)
    assert RunOutcome.KILLED == h.store.runs.get_run(run.id).outcome
    wait_until(lambda: [] == _processes_of_run(run.id), 10)
    assert None is runner.poll()
    runner.send_signal(signal.SIGQUIT)  # the task runs again under the new worker: stop now
    assert 0 == runner.wait(30)
    assert not h.log_has("Traceback")


def test_per_task_log_lines_are_debug_and_corral_log_level_shows_them(h: Harness) -> None:
    """A task done logs nothing per task at INFO; CORRAL_LOG_LEVEL=DEBUG adds its two lines."""
    h.add()
    assert 0 == h.start("--exec", "true", "--once").wait(30)
    assert not h.log_has("task.started")
    h.add()
    h.env["CORRAL_LOG_LEVEL"] = "debug"
    assert 0 == h.start("--exec", "true", "--once", name="w2").wait(30)
    assert h.log_has("DEBUG task.started") and h.log_has("DEBUG task.finished")


def test_a_bad_corral_log_level_is_exit_2_before_anything_is_written(tmp_path: Path) -> None:
    """An unknown level is a one-line error naming the variable; no store is created."""
    db = tmp_path / "new.db"
    env = {**os.environ, "CORRAL_LOG_LEVEL": "loud"}
    run = subprocess.run(
        [CORRAL, "worker", "start", "--name", "w", "--exec", "true", "--db", str(db)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (2, False) == (run.returncode, db.exists())
    assert 1 == len(run.stderr.strip().splitlines())
    assert "CORRAL_LOG_LEVEL: expected one of DEBUG, INFO, WARNING, ERROR" in run.stderr
