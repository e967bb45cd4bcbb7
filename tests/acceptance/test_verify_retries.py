"""Issue 31: a failed verify step goes back to the agent, on its own count. The stand-in
claude (tests/agents/fakes) works in a real worktree; `[worktree] verify` is a real check
that fails as often as the test says, printing which round failed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from tests.acceptance.test_work_lands import Project, assert_landed, init_repo
from tests.agents.recorded import assert_resumed
from tests.conftest import CORRAL
from tests.runtime.conftest import wait_until

CHECK = """#!/bin/sh
# Fails its first FAILS rounds (all of them when FAILS is "always"), counted in a file.
count_file="$(dirname "$0")/rounds"
round=$(( $(cat "$count_file" 2>/dev/null || echo 0) + 1 ))
echo "$round" > "$count_file"
echo "checking round $round in $PWD"
if [ "$FAILS" = always ] || [ "$round" -le "$FAILS" ]; then
    echo "FAILED round $round: test_widget broke" >&2
    exit 1
fi
"""


class Checked(Project):
    """A project whose runners verify each run with CHECK (failing its first `fails`)."""

    def __init__(self, folder: Path, check: Path) -> None:
        super().__init__(folder)
        self.check = check

    @property
    def env(self) -> dict[str, str]:
        return super().env | {"CORRAL_WORKTREE_VERIFY": f"sh {self.check}"}


def checked(tmp_path: Path, fails: str) -> Checked:
    """An initialised repository and store whose verify step fails `fails` rounds."""
    folder, tools = tmp_path / "project", tmp_path / "tools"
    folder.mkdir()
    tools.mkdir()
    check = tools / "check.sh"
    check.write_text(CHECK.replace('"$FAILS"', f'"{fails}"'))
    init_repo(folder)
    (folder / ".corral").mkdir()
    made = Checked(folder, check)
    assert 0 == made("init").returncode
    return made


@pytest.fixture
def fails_twice(tmp_path: Path) -> Checked:
    """A project whose check fails its first two rounds, then passes."""
    return checked(tmp_path, "2")


@pytest.fixture
def always_fails(tmp_path: Path) -> Checked:
    """A project whose check never passes."""
    return checked(tmp_path, "always")


def test_a_check_failing_twice_goes_back_to_the_same_session_and_then_lands(
    fails_twice: Checked,
) -> None:
    """Three runs in one worktree and one session, the second and third told the round
    that failed; no attempt spent (one attempt allowed), and the work lands."""
    project = fails_twice
    done = project("add", "Fix the widget", "--max-attempts", "1")
    assert 0 == done.returncode, done.stderr
    task = done.stdout.strip()
    project.work("claude")
    shown = project.json("show", task)
    assert ("ready", 0) == (shown["status"], shown["attempts"])
    [run] = project.json("runs", "--task", task)
    assert "deferred" == run["outcome"]
    assert run["error"].startswith(f"verify failed: `sh {project.check}` exited with status 1\n")
    assert run["error"].endswith("FAILED round 1: test_widget broke")
    project.work("claude")
    assert 0 == project.work("claude").returncode
    first, second, third = project.calls()
    assert_resumed(first, second)
    assert_resumed(first, third)
    assert "verify" not in first["prompt"]
    assert "FAILED round 1: test_widget broke" in second["prompt"]
    assert "FAILED round 2: test_widget broke" in third["prompt"]
    assert_landed(project, task)
    assert 1 == project.json("show", task)["attempts"]


def test_a_check_that_always_fails_waits_after_its_retries_with_its_output(
    always_fails: Checked,
) -> None:
    """After verify_retries (2) retries the task waits `verify: ...`, the run's error
    holding the output's tail; answered, the resumed session is told both, and its next
    failure is a retry again."""
    project = always_fails
    task = project.add("Fix the widget")
    for _ in range(3):
        project.work("claude")
    shown = project.json("show", task)
    output = Path(project.json("runs", "--task", task)[0]["transcript_path"])
    output = output.with_suffix(".verify.out")
    reason = (
        f"verify: `sh {project.check}` exited with status 1 after 2 retries; its output: {output}"
    )
    assert ("waiting", reason, 0) == (shown["status"], shown["wait_reason"], shown["attempts"])
    assert output.read_text().startswith("checking round 3 in ")
    waited = project.json("runs", "--task", task)[0]
    assert "waiting" == waited["outcome"]
    assert waited["error"].endswith("FAILED round 3: test_widget broke")
    assert 0 == project("answer", task, "the widget needs its spring").returncode
    project.work("claude")
    *_, answered = project.calls()
    assert "the widget needs its spring" in answered["prompt"]
    assert "FAILED round 3: test_widget broke" in answered["prompt"]
    assert "ready" == project.json("show", task)["status"]


HANGING_CHECK = """#!/bin/sh
# Round 1 and 3 fail, round 2 hangs (its runner is killed meanwhile), round 4 passes.
count_file="$(dirname "$0")/rounds"
round=$(( $(cat "$count_file" 2>/dev/null || echo 0) + 1 ))
echo "$round" > "$count_file"
if [ "$round" -eq 2 ]; then
    touch "$(dirname "$0")/hanging"
    sleep 5
fi
if [ "$round" -eq 1 ] || [ "$round" -eq 3 ]; then
    echo "FAILED round $round" >&2
    exit 1
fi
"""


def test_a_runner_killed_during_the_check_neither_loses_nor_doubles_a_retry(
    tmp_path: Path,
) -> None:
    """kill -9 of the runner while its check runs: the killed run is no verify retry, and
    the ones before and after it count once each (retry 1, then 2 of 2), then it lands."""
    project = checked(tmp_path, "0")
    project.check.write_text(HANGING_CHECK)
    task = project.add("Fix the widget")
    project.work("claude")
    runner = subprocess.Popen(
        [
            CORRAL,
            *("worker", "start", "--name", "claude", "--agent", "claude"),
            "--once",
            "--worktree",
        ],
        cwd=project.folder,
        env=project.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_until((project.check.parent / "hanging").exists, 30)
        runner.kill()
    finally:
        runner.wait(timeout=30)
    project.work("claude")
    deferred = [
        e["reason"] for e in project.json("events", "--task", task) if e["name"] == "task.deferred"
    ]
    assert ["(retry 1 of 2)", "(retry 2 of 2)"] == [r[r.index("(") :] for r in deferred]
    assert 0 == project.work("claude").returncode
    assert_landed(project, task)
