"""`make run`'s job end to end: the fleet demo lands every task's work on its main."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.py"


@pytest.mark.timeout(300)  # ~12 s alone; several times that on a loaded machine
def test_the_demo_lands_all_eighteen_tasks_and_tells_its_whole_story(tmp_path: Path) -> None:
    """A pool of three sample agents in worktrees: all done, every branch landed, main
    clean, and the conflict, the flaky retry, the killed worker, the review, the task that
    waited for a person's answer and corral's commits of what agents left all seen; its
    closing hint works in a shell without the virtual environment on the PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    venv_bin = os.path.dirname(os.path.abspath(sys.executable))
    env["PATH"] = os.pathsep.join(
        p for p in env.get("PATH", "").split(os.pathsep) if os.path.abspath(p) != venv_bin
    )
    with subprocess.Popen(
        [sys.executable, str(DEMO)],
        env={**env, "DEMO_DIR": str(tmp_path / "demo")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as demo:
        try:
            out, err = demo.communicate(timeout=280)
        finally:  # a demo that hangs takes its orchestrator and pool with it
            with contextlib.suppress(psutil.Error):
                for proc in psutil.Process(demo.pid).children(recursive=True):
                    with contextlib.suppress(psutil.Error):
                        proc.kill()
            demo.kill()
    done = subprocess.CompletedProcess(demo.args, demo.returncode, out, err)
    assert 0 == done.returncode, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout.splitlines()
    assert any(
        line.startswith("18/18 tasks done") and "0 branch(es) not landed" in line
        for line in summary
    )
    assert [] == [line for line in summary if line.startswith("  NO ")]
    told = {line[7:] for line in summary if line.startswith("  yes  ")}
    assert {
        "a run changed nothing, waited for a person, was answered and landed",
        "corral committed what the agents left, and landed it",
    } <= told
    assert "Traceback" not in done.stdout + done.stderr
    hint = next(line for line in summary if line.startswith("look around: "))
    looked = subprocess.run(
        ["sh", "-c", hint.removeprefix("look around: ")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == looked.returncode, looked.stderr
