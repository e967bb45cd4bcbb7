"""`[worktree] verify`: a command that must pass in the worktree after the agent exits 0,
before the task is done or landed; its failure sends the task back (its attempt given
back) with its output's tail, which the next run's prompt carries, or, past
`verify_retries`, makes it wait for a person."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .conftest import agent_script, git

AGENT = """#!/bin/sh
# Attempt 1 commits a file the check rejects; an attempt told why fixes it.
cat > "$OBS/$CORRAL_TASK_ID.prompt.$CORRAL_RUN_ID"
if grep -q "good.txt is missing" "$OBS/$CORRAL_TASK_ID.prompt.$CORRAL_RUN_ID"; then
    echo fixed > good.txt && git add good.txt && git commit --quiet -m fix
else
    echo "$CORRAL_TASK_ID" >> bad.txt && git add bad.txt && git commit --quiet -m guess
fi
"""

CHECK = """#!/bin/sh
echo "checking in $PWD for $CORRAL_TASK_ID on $CORRAL_BRANCH"
[ -f good.txt ] && exit 0
echo "FAILED: good.txt is missing" >&2
exit 1
"""


@pytest.fixture
def checked_repo(repo: Path) -> Path:
    """The repository with its check script committed."""
    (repo / "check.sh").write_text(CHECK)
    (repo / "check.sh").chmod(0o755)
    git(repo, "add", "check.sh")
    git(repo, "commit", "--quiet", "-m", "the check")
    return repo


def _start(cli: Any, repo: Path, script: str, obs: Path, verify: str) -> Any:
    return cli(
        *("worker", "start", "--name", "w", "--exec", script, "--max-tasks", "1", "--worktree"),
        *("--workdir", str(repo)),
        env={"OBS": str(obs), "CORRAL_WORKTREE_VERIFY": verify},
    )


def test_a_failed_check_sends_the_task_back_and_the_next_run_is_told_why(
    cli: Any, checked_repo: Path, tmp_path: Path
) -> None:
    """The failed run ends deferred, its attempt given back (one allowed), and the next
    run's prompt carries the check's output; that run's work lands."""
    script, obs = agent_script(tmp_path, AGENT)
    task = cli("add", "make it pass", "--max-attempts", "1").out.strip()
    assert 0 == _start(cli, checked_repo, script, obs, "./check.sh").code
    first = json.loads(cli("show", task, "--json").out)
    assert ("ready", 0, None) == (
        first["status"],
        first["attempts"],
        git_file(checked_repo, "bad.txt"),
    )
    runs = json.loads(cli("runs", "--task", task, "--json").out)
    assert "deferred" == runs[0]["outcome"]
    error = runs[0]["error"]
    assert error.startswith("verify failed: `./check.sh` exited with status 1\n")
    assert "checking in " in error and f"for {task} on corral/w/{task}" in error
    assert error.endswith("FAILED: good.txt is missing")

    assert 0 == _start(cli, checked_repo, script, obs, "./check.sh").code
    assert "done" == json.loads(cli("show", task, "--json").out)["status"]
    prompts = sorted(obs.glob(f"{task}.prompt.*"), key=lambda p: p.stat().st_mtime)
    assert "failed the verify step" not in prompts[0].read_text()
    assert "FAILED: good.txt is missing" in prompts[1].read_text()
    assert "fixed\n" == (checked_repo / "good.txt").read_text()  # landed on main
    run_dir = Path(json.loads(cli("runs", "--task", task, "--json").out)[0]["transcript_path"])
    assert "checking in" in run_dir.with_suffix(".verify.out").read_text()


def test_a_check_that_passes_changes_nothing_and_one_too_slow_waits_without_retries(
    cli: Any, checked_repo: Path, tmp_path: Path
) -> None:
    """A check that passes lets the task finish; one past its timeout, with
    `verify_retries = 0`, makes the task wait at once, the run's error saying why."""
    script, obs = agent_script(tmp_path, AGENT)
    passing = cli("add", "t").out.strip()
    assert 0 == _start(cli, checked_repo, script, obs, "true").code
    assert "done" == json.loads(cli("show", passing, "--json").out)["status"]
    slow = cli("add", "t2", "--max-attempts", "1").out.strip()
    started = cli(
        *("worker", "start", "--name", "w", "--exec", script, "--max-tasks", "1", "--worktree"),
        *("--workdir", str(checked_repo), "--grace", "0.1"),
        env={
            "OBS": str(obs),
            "CORRAL_WORKTREE_VERIFY": "sleep 30",
            "CORRAL_WORKTREE_VERIFY_TIMEOUT_S": "0.3",
            "CORRAL_WORKTREE_VERIFY_RETRIES": "0",
        },
    )
    shown = json.loads(cli("show", slow, "--json").out)
    assert "waiting" == shown["status"], started.err
    expected = "verify: `sleep 30` did not finish within 0.3 s after 0 retries; its output: "
    assert shown["wait_reason"].startswith(expected)
    [run] = json.loads(cli("runs", "--task", slow, "--json").out)
    assert ("waiting", "verify failed: `sleep 30` did not finish within 0.3 s") == (
        run["outcome"],
        run["error"],
    )


def test_a_verify_line_with_unbalanced_quotes_is_refused_at_start(
    cli: Any, checked_repo: Path, tmp_path: Path
) -> None:
    script, obs = agent_script(tmp_path, AGENT)
    refused = _start(cli, checked_repo, script, obs, "./check.sh 'oops")
    assert 2 == refused.code
    assert refused.err.startswith("corral: error: worktree.verify: expected a command line")


def git_file(repo: Path, name: str) -> str | None:
    """The file `name` on main, or None."""
    return (repo / name).read_text() if (repo / name).exists() else None


ENV_CHECK = """#!/bin/sh
env > "$OBS/verify.env"
"""


def test_the_check_gets_the_tasks_environment_not_the_workers(
    cli: Any, repo: Path, tmp_path: Path
) -> None:
    """The check runs what the agent wrote: a secret and a name not on the allow-list that
    the worker has are not in its environment; an allowed one and the task's id are."""
    (repo / "check.sh").write_text(ENV_CHECK)
    (repo / "check.sh").chmod(0o755)
    git(repo, "add", "check.sh")
    git(repo, "commit", "--quiet", "-m", "the check")
    script, obs = agent_script(tmp_path, "#!/bin/sh\necho x > x.txt\n")
    task = cli("add", "anything").out.strip()
    env = {"OBS": str(obs), "CORRAL_WORKTREE_VERIFY": "./check.sh", "CORRAL_ENV_ALLOW": "OBS"}
    env |= {"DB_PASS": "v-pass-1", "EDITOR": "v-editor-2"}
    started = cli(
        *("worker", "start", "--name", "w", "--exec", script, "--max-tasks", "1", "--worktree"),
        *("--workdir", str(repo)),
        env=env,
    )
    assert 0 == started.code, started.err
    seen = (obs / "verify.env").read_text()
    assert f"CORRAL_TASK_ID={task}\n" in seen and f"OBS={obs}\n" in seen
    assert "v-pass-1" not in seen and "v-editor-2" not in seen
