"""One task command run to its end (corral.runtime.worker.executor), with real processes.

After each kind of ending the tests check what the issue asks: no process marked with the
run's id survives, and the test process has no child left, zombie or not.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psutil
import pytest

from corral.foundation.clock import FakeClock, SystemClock
from corral.foundation.errors import CorralError
from corral.foundation.process_keys import runs_key
from corral.runtime.worker import proctree
from corral.runtime.worker.executor import (
    CommandResult,
    CommandSpec,
    Ending,
    run_command,
)
from corral.runtime.worker.spawn import CommandNotFound

PY = sys.executable


def wait_until(predicate: Callable[[], bool], timeout_s: float = 5.0) -> None:
    """Poll `predicate` until it holds; fail the test if it does not within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(0.005)


def marked(run_id: str) -> list[psutil.Process]:
    """Live processes whose environment has CORRAL_RUN_ID=run_id."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() == psutil.STATUS_ZOMBIE:
                continue
            if proc.environ().get("CORRAL_RUN_ID") == run_id:
                found.append(proc)
        except psutil.Error:
            continue
    return found


# The test process's children from before each run id's test (a browser test's driver that
# a process of the suite keeps alive): not the run's to leave.
_CHILDREN_BEFORE: dict[str, set[int]] = {}


@pytest.fixture
def run_id() -> Iterator[str]:
    """A fresh run id; whatever still carries it at teardown is killed."""
    ident = f"test-{uuid.uuid4().hex}"
    _CHILDREN_BEFORE[ident] = {p.pid for p in psutil.Process().children()}
    yield ident
    _CHILDREN_BEFORE.pop(ident, None)
    for proc in marked(ident):
        proc.send_signal(signal.SIGKILL)


@pytest.fixture
def make_spec(tmp_path: Path, run_id: str) -> Callable[..., CommandSpec]:
    """Build a spec for `argv` in tmp_path; keywords override the defaults."""

    def make(*argv: str, **overrides: Any) -> CommandSpec:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        fields: dict[str, Any] = {
            "argv": argv,
            "stdin_text": None,
            "env": {**env, "CORRAL_RUN_ID": run_id},
            "cwd": str(tmp_path),
            "transcript_path": str(tmp_path / "run.jsonl"),
            "stderr_path": str(tmp_path / "run.stderr"),
            "run_id": run_id,
            "grace_s": 0.3,
        }
        return CommandSpec(**{**fields, **overrides})

    return make


def run(spec: CommandSpec, **kwargs: Any) -> CommandResult:
    """Run `spec` on the real clock, never stopped unless `stop` is given."""
    kwargs.setdefault("stop", lambda: None)
    return run_command(spec, clock=SystemClock(), **kwargs)


def running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie waiting to be reaped by init is not)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def assert_nothing_left(run_id: str) -> None:
    """No process of the run survives and the test process has no child left, zombie or not."""
    assert [] == marked(run_id)
    before = _CHILDREN_BEFORE.get(run_id, set())
    assert [] == [p for p in psutil.Process().children() if p.pid not in before]


def test_exit_zero_captures_stdout_to_the_transcript(make_spec, run_id, tmp_path):
    """A command that exits 0 ends EXITED with code 0 and its stdout in the transcript."""
    result = run(make_spec(PY, "-c", "print('hello')"))
    assert Ending.EXITED == result.ending
    assert 0 == result.exit_code
    assert "hello\n" == (tmp_path / "run.jsonl").read_text()
    assert not result.stalled
    assert_nothing_left(run_id)


def test_a_command_gets_the_runs_key_and_never_the_runners_own(make_spec, tmp_path):
    """The child's environment holds this process's runs key (CORRAL_RUN_KEY, whatever the
    spec said) and not the runner's key (CORRAL_WORKER_KEY), even when the spec has it."""
    show = "import os; print(os.environ.get('CORRAL_RUN_KEY'), os.environ.get('CORRAL_WORKER_KEY'))"
    env = {**os.environ, "CORRAL_WORKER_KEY": "runner's", "CORRAL_RUN_KEY": "forged"}
    run(make_spec(PY, "-c", show, env=env))
    assert f"{runs_key()} None\n" == (tmp_path / "run.jsonl").read_text()


def test_non_zero_exit_reports_code_and_stderr_tail(make_spec, run_id):
    """A failing command's exit code and the end of its stderr are reported."""
    script = "import sys; sys.stderr.write('x' * 5000 + 'boom'); sys.exit(3)"
    result = run(make_spec(PY, "-c", script))
    assert Ending.EXITED == result.ending
    assert 3 == result.exit_code
    assert 2048 == len(result.stderr_tail)
    assert result.stderr_tail.endswith("boom")
    assert_nothing_left(run_id)


def test_stderr_tail_drops_a_character_cut_in_half(make_spec):
    """The tail starts at a whole UTF-8 character, not at a replacement mark."""
    script = "import sys; sys.stderr.buffer.write('€'.encode() * 3000)"
    result = run(make_spec(PY, "-c", script))
    assert "€" * 682 == result.stderr_tail


def test_stdout_is_streamed_to_the_transcript_while_running(make_spec, run_id, tmp_path):
    """Output reaches the transcript file while the command still runs."""
    go = tmp_path / "go"
    script = (
        "import os, sys, time\n"
        "print('first', flush=True)\n"
        "while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
        "print('second')\n"
    )
    transcript = tmp_path / "run.jsonl"
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(run, make_spec(PY, "-c", script, str(go)))
        wait_until(lambda: transcript.exists() and "first\n" == transcript.read_text())
        assert not future.done()
        go.touch()
        result = future.result(timeout=10)
    assert 0 == result.exit_code
    assert "first\nsecond\n" == transcript.read_text()
    assert_nothing_left(run_id)


def test_a_large_prompt_is_delivered_in_full_on_stdin(make_spec, tmp_path):
    """A 1 MB prompt reaches the command's stdin whole, without a deadlock."""
    prompt = "".join(f"line {n} of the prompt\n" for n in range(50_000))[: 1 << 20]
    script = (
        "import hashlib, sys; data = sys.stdin.buffer.read(); "
        "print(len(data), hashlib.sha256(data).hexdigest())"
    )
    result = run(make_spec(PY, "-c", script, stdin_text=prompt))
    digest = hashlib.sha256(prompt.encode()).hexdigest()
    assert 0 == result.exit_code
    assert f"{1 << 20} {digest}\n" == (tmp_path / "run.jsonl").read_text()


def test_a_command_that_ignores_its_prompt_still_ends_cleanly(make_spec, run_id):
    """A command that exits without reading a large prompt is not an error."""
    result = run(make_spec(PY, "-c", "pass", stdin_text="x" * (4 << 20)))
    assert Ending.EXITED == result.ending
    assert 0 == result.exit_code
    assert_nothing_left(run_id)


def test_no_prompt_means_an_empty_stdin(make_spec, tmp_path):
    """Without stdin_text the command reads end of file at once."""
    result = run(make_spec(PY, "-c", "import sys; print(repr(sys.stdin.read()))"))
    assert 0 == result.exit_code
    assert "''\n" == (tmp_path / "run.jsonl").read_text()


def test_env_and_cwd_are_honoured(make_spec, run_id, tmp_path):
    """The command runs in the given directory with exactly the given environment."""
    workdir = tmp_path / "work"
    workdir.mkdir()
    script = "import os; print(os.getcwd(), os.environ['GREETING'], os.environ['CORRAL_RUN_ID'])"
    env = {"GREETING": "hi", "PATH": os.environ.get("PATH", "")}
    result = run(make_spec(PY, "-c", script, env=env, cwd=str(workdir)))
    assert 0 == result.exit_code
    assert f"{workdir} hi {run_id}\n" == (tmp_path / "run.jsonl").read_text()


def test_missing_executable_raises_command_not_found(make_spec):
    """An executable that does not exist is one clear CommandNotFound with exit code 3."""
    with pytest.raises(CommandNotFound) as raised:
        run(make_spec("no-such-agent-cli-xyz", "--print"))
    assert 3 == raised.value.exit_code
    assert "command not found: no-such-agent-cli-xyz" == raised.value.message


def test_a_file_that_is_not_executable_raises_command_not_found(make_spec, tmp_path):
    """A command file without the execute bit is CommandNotFound saying why."""
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\necho hi\n")
    with pytest.raises(CommandNotFound) as raised:
        run(make_spec(str(script)))
    assert f"cannot run {script}: Permission denied" == raised.value.message


def test_missing_cwd_is_invalid_input_naming_the_path(make_spec, tmp_path):
    """A working directory that does not exist is refused with exit code 2, naming it."""
    missing = str(tmp_path / "gone")
    with pytest.raises(CorralError) as raised:
        run(make_spec(PY, "-c", "pass", cwd=missing))
    assert 2 == raised.value.exit_code
    assert missing in raised.value.message


TREE = """
sleep 300 & echo $! >> pids
setsid sleep 300 & echo $! >> pids
bash -c 'setsid sleep 300 & echo $! >> pids' &
bash -c 'sleep 300 & echo $! >> pids; wait' & echo $! >> pids
wait
"""


def test_timeout_kills_the_whole_tree_including_setsid_escapees(make_spec, run_id, tmp_path):
    """On timeout every process of the run dies, also grandchildren that left the group."""
    pids = tmp_path / "pids"
    spec = make_spec("bash", "-c", TREE, timeout_s=0.5)
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(run, spec)
        wait_until(lambda: pids.exists() and 5 == len(pids.read_text().split()))
        result = future.result(timeout=10)
    assert Ending.TIMEOUT == result.ending
    assert -signal.SIGTERM == result.exit_code
    assert_nothing_left(run_id)
    assert [] == [pid for pid in map(int, pids.read_text().split()) if running(pid)]


def test_a_command_ignoring_sigterm_is_killed_after_the_grace_period(make_spec, run_id):
    """A tree that ignores SIGTERM is SIGKILLed once grace_s has passed."""
    script = "trap '' TERM; sleep 300 & while :; do sleep 0.05; done"
    result = run(make_spec("bash", "-c", script, timeout_s=0.3, grace_s=0.3))
    assert Ending.TIMEOUT == result.ending
    assert -signal.SIGKILL == result.exit_code
    assert 0.6 <= result.duration_s < 2.5
    assert_nothing_left(run_id)


def test_stop_ends_the_command_as_stopped(make_spec, run_id, tmp_path):
    """When stop() gives a reason the tree is killed and the run ends STOPPED with it."""
    transcript = tmp_path / "run.jsonl"
    script = "echo ready; sleep 300 & wait"

    def stop() -> str | None:
        return "shutdown" if transcript.exists() and transcript.read_text() else None

    result = run(make_spec("bash", "-c", script), stop=stop)
    assert Ending.STOPPED == result.ending
    assert "shutdown" == result.stop_reason
    assert -signal.SIGTERM == result.exit_code
    assert_nothing_left(run_id)


def test_a_stall_is_reported_once_per_episode(make_spec, run_id, tmp_path):
    """on_stall fires once per silent stretch and again after the output has grown."""
    script = (
        "import os, sys, time\n"
        "for n in range(2):\n"
        "    print(n, flush=True)\n"
        "    while not os.path.exists(f'{sys.argv[1]}{n}'): time.sleep(0.01)\n"
    )
    calls: list[int] = []

    def on_stall() -> None:
        (tmp_path / f"go{len(calls)}").touch()
        calls.append(len(calls))

    spec = make_spec(PY, "-c", script, str(tmp_path / "go"), stall_timeout_s=0.2)
    result = run(spec, on_stall=on_stall)
    assert [0, 1] == calls
    assert Ending.EXITED == result.ending
    assert 0 == result.exit_code
    assert result.stalled
    assert_nothing_left(run_id)


def test_a_stalled_command_is_killed_when_asked(make_spec, run_id):
    """With kill_stalled a silent command is killed and the run ends STALLED."""
    calls: list[str] = []
    spec = make_spec("bash", "-c", "echo hi; sleep 300", stall_timeout_s=0.2, kill_stalled=True)
    result = run(spec, on_stall=lambda: calls.append("stall"))
    assert ["stall"] == calls
    assert Ending.STALLED == result.ending
    assert result.stalled
    assert_nothing_left(run_id)


def test_background_processes_left_after_a_normal_exit_are_ended(make_spec, run_id, tmp_path):
    """Grandchildren still running when the command exits 0 are ended too."""
    pids = tmp_path / "pids"
    script = "sleep 300 & echo $! >> pids; setsid sleep 300 & echo $! >> pids; echo done"
    result = run(make_spec("bash", "-c", script))
    assert Ending.EXITED == result.ending
    assert 0 == result.exit_code
    assert_nothing_left(run_id)
    started = [int(pid) for pid in pids.read_text().split()]
    assert 2 == len(started)
    assert [] == [pid for pid in started if running(pid)]


def test_timeout_on_a_fake_clock_needs_no_waiting(make_spec, run_id):
    """Timeout is measured on the injected clock, so fake time ends a long command at once."""
    clock = FakeClock()
    spec = make_spec(PY, "-c", "import time; time.sleep(300)", timeout_s=600.0, grace_s=5.0)
    started = time.monotonic()
    result = run_command(spec, clock=clock, stop=lambda: None, poll_s=1.0)
    assert Ending.TIMEOUT == result.ending
    assert 600.0 <= result.duration_s
    assert time.monotonic() - started < 2.0
    assert_nothing_left(run_id)


def test_stall_on_a_fake_clock(make_spec, run_id):
    """A silent command is found stalled after stall_timeout_s of fake time."""
    spec = make_spec(
        PY, "-c", "import time; time.sleep(300)", stall_timeout_s=60.0, kill_stalled=True
    )
    result = run_command(spec, clock=FakeClock(), stop=lambda: None, poll_s=1.0)
    assert Ending.STALLED == result.ending
    assert 60.0 <= result.duration_s
    assert_nothing_left(run_id)


def test_an_error_in_a_callback_still_ends_the_tree(make_spec, run_id, tmp_path):
    """If stop() raises, the tree is killed and reaped before the error propagates."""
    transcript = tmp_path / "run.jsonl"

    def stop() -> str | None:
        if transcript.exists() and transcript.read_text():
            raise KeyboardInterrupt
        return None

    with pytest.raises(KeyboardInterrupt):
        run(make_spec("bash", "-c", "echo ready; sleep 300 & wait"), stop=stop)
    assert_nothing_left(run_id)


def test_the_runner_adopts_orphans_so_no_machine_wide_scan_is_needed(make_spec, run_id):
    """On Linux the process running commands is a child subreaper: the run's orphans become
    its children, are found there by their mark, and are ended and reaped."""
    script = "(setsid sleep 300 &) ; setsid sh -c 'exit 0' & sleep 0.2; echo done"
    result = run(make_spec("bash", "-c", script))
    assert (Ending.EXITED, True) == (result.ending, proctree.available())
    assert_nothing_left(run_id)  # the sleeper ended, the exited orphan reaped (no zombie)


def test_reaping_orphans_leaves_the_runners_own_commands_to_whoever_waits_for_them():
    """A git command the runner ran itself, exited but not yet waited for, is not an orphan:
    reaping it would make `subprocess` read its status as 0 (a failed `git rev-parse` once
    read as a merge in progress). Its caller still gets the real status."""
    own = subprocess.Popen(["sh", "-c", "exit 3"])  # in this process's session
    os.waitid(os.P_PID, own.pid, os.WEXITED | os.WNOWAIT)  # exited, still a zombie
    proctree.reap_adopted()
    assert [] == proctree.adopted(b"CORRAL_RUN_ID=none")
    assert 3 == own.wait(timeout=5)


FALLBACK = """
import os, sys
from corral.foundation.clock import SystemClock
from corral.runtime.worker import executor, proctree
from corral.runtime.worker.executor import CommandSpec
proctree._state["on"] = False  # as where there is no subreaper: scan every process
folder, run_id = sys.argv[1], sys.argv[2]
script = "sleep 300 & setsid sleep 300 & echo done"
spec = CommandSpec(argv=("bash", "-c", script), stdin_text=None,
                   env={**os.environ, "CORRAL_RUN_ID": run_id}, cwd=folder,
                   transcript_path=folder + "/run.jsonl", stderr_path=folder + "/run.stderr",
                   run_id=run_id)
result = executor.run_command(spec, clock=SystemClock(), stop=lambda: None)
sys.exit(0 if result.exit_code == 0 else 1)
"""


def test_without_a_subreaper_the_environment_scan_still_finds_escapees(run_id, tmp_path):
    """The fallback (no prctl, no /proc children) ends grandchildren by their mark too."""
    code = subprocess.run(
        [PY, "-c", FALLBACK, str(tmp_path), run_id], check=False, timeout=30
    ).returncode
    assert 0 == code
    assert [] == marked(run_id)
    if proctree.available():  # this process adopts what the child left: reap it
        proctree.reap_adopted()
