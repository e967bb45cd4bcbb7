"""Landing (`worktree.land`, `corral land`, `corral branches`) with real runners and git."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .conftest import agent_script, commit_file, git

AGENT = """#!/bin/sh
# Write the task's title as a line of FILE (from the description), commit it. After a land
# conflict (the note says so), merge the base and settle the file on this task's line.
set -e
file=$(sed -n 's/^file=//p')
title="$CORRAL_TASK_ID"
env | grep '^CORRAL_' | sort > "$OBS/$CORRAL_TASK_ID.env.$$"
if [ -n "$CORRAL_REVIEW_NOTE" ]; then
  git merge --quiet --no-edit "$CORRAL_BASE_REF" 2>/dev/null || true
  printf 'one\\n%s\\nthree\\n' "$title" > "$file"
  git add "$file" && git commit --quiet --no-edit -m "resolve $title" || true
  exit 0
fi
if [ -n "$GATE" ]; then  # wait until GATE tasks have started: they share a base
  touch "$OBS/started.$CORRAL_TASK_ID"
  while [ "$(ls "$OBS" | grep -c '^started')" -lt "$GATE" ]; do sleep 0.01; done
fi
if [ "$file" = shared.txt ]; then
  printf 'one\\n%s\\nthree\\n' "$title" > shared.txt
else
  echo "$title" > "$file"
fi
git add "$file" && git commit --quiet -m "$title edits $file"
"""


@pytest.fixture
def agent(tmp_path: Path) -> tuple[str, Path]:
    """The agent script and the folder where it records its environment."""
    return agent_script(tmp_path, AGENT)


def _add(cli, file: str, *extra: str) -> str:
    """A task editing `file`, retried at once after a failure."""
    return cli(
        "add", f"edit {file}", "--desc", f"file={file}", *extra, env={"CORRAL_RETRY_BASE_S": "0"}
    ).out.strip()


def _work(cli, repo, agent, *, tasks: int, env: dict[str, str] | None = None, slots: int = 1):
    script, obs = agent
    return cli(
        *("worker", "start", "--name", "w1", "--exec", script, "--worktree"),
        *("--workdir", str(repo), "--max-tasks", str(tasks), "--concurrency", str(slots)),
        env={"OBS": str(obs), **(env or {})},
    )


def _show(cli, task: str) -> dict:
    return json.loads(cli("show", task, "--json").out)


def _branches(cli, repo) -> dict[str, str]:
    listed = json.loads(cli("branches", "--repo", str(repo), "--json").out)
    return {b["task_id"]: b["where"] for b in listed}


def test_work_without_review_lands_on_the_base_as_it_finishes(cli, repo, agent):
    """Two tasks on two files: both on main, no branch or worktree left, both listed landed."""
    first, second = _add(cli, "a.txt"), _add(cli, "b.txt")
    ran = _work(cli, repo, agent, tasks=2)
    assert 0 == ran.code, ran.err
    assert (first, second) == tuple(
        (repo / name).read_text().strip() for name in ("a.txt", "b.txt")
    )
    assert "" == git(repo, "branch", "--list", "corral/*")
    assert "" == git(repo, "status", "--porcelain")
    assert {first: "landed", second: "landed"} == _branches(cli, repo)
    events = json.loads(cli("events", "--task", first, "--json").out)
    landed = [e for e in events if e["name"] == "task.landed"]
    assert git(repo, "rev-parse", "main~1") == landed[0]["data"]["merged_commit"]


def test_a_conflicting_land_fails_the_run_and_the_next_run_lands_it(cli, repo, agent):
    """Both edit line 2 from the same base: one lands; the other's land conflicts, its run
    fails naming the file, its next run is told, merges main in and lands."""
    tasks = [_add(cli, "shared.txt"), _add(cli, "shared.txt")]
    ran = _work(cli, repo, agent, tasks=3, slots=2, env={"GATE": "2"})
    assert 0 == ran.code, ran.err
    attempts = {t: _show(cli, t)["attempts"] for t in tasks}
    assert [1, 2] == sorted(attempts.values())
    second = max(attempts, key=attempts.__getitem__)
    assert "done" == _show(cli, second)["status"]
    runs = json.loads(cli("runs", "--task", second, "--json").out)
    outcomes = sorted((r["outcome"], r["error"]) for r in runs)
    assert [("done", None), ("failed", "land conflict with main in shared.txt")] == outcomes
    _, obs = agent
    notes = [p.read_text() for p in obs.glob(f"{second}.env.*")]
    assert any("conflicted in shared.txt" in n for n in notes)
    assert f"one\n{second}\nthree\n" == (repo / "shared.txt").read_text()
    assert dict.fromkeys(tasks, "landed") == _branches(cli, repo)
    assert "" == git(repo, "branch", "--list", "corral/*")


def test_land_keep_keeps_the_branch_until_corral_land(cli, repo, agent):
    """land = keep: done with the branch kept and listed; `corral land` merges and removes it."""
    task = _add(cli, "a.txt")
    ran = _work(cli, repo, agent, tasks=1, env={"CORRAL_WORKTREE_LAND": "keep"})
    assert 0 == ran.code, ran.err
    assert "done" == _show(cli, task)["status"]
    assert not (repo / "a.txt").exists()
    assert {task: "kept"} == _branches(cli, repo)
    landed = cli("land", task, "--repo", str(repo), "--json")
    assert 0 == landed.code, landed.err
    assert git(repo, "rev-parse", "main") == json.loads(landed.out)["merged_commit"]
    assert task == (repo / "a.txt").read_text().strip()
    assert "" == git(repo, "branch", "--list", "corral/*")
    assert {task: "landed"} == _branches(cli, repo)


def test_corral_land_of_a_conflicting_kept_branch_sends_the_task_back(cli, repo, agent):
    """`corral land` that conflicts: exit 1, the files named, the task ready on its branch."""
    task = _add(cli, "shared.txt")
    assert 0 == _work(cli, repo, agent, tasks=1, env={"CORRAL_WORKTREE_LAND": "keep"}).code
    commit_file(repo, "shared.txt", "one\nmine\nthree\n")
    landed = cli("land", task, "--repo", str(repo))
    assert 1 == landed.code
    assert "land conflict in shared.txt" in landed.err
    shown = _show(cli, task)
    assert ("ready", f"corral/w1/{task}") == (shown["status"], shown["branch"])
    assert {task: "working"} == _branches(cli, repo)


def test_land_command_gets_the_branch_base_and_task(cli, repo, agent, tmp_path):
    """land = command: run in the worktree with branch, base and task; the branch stays."""
    seen = tmp_path / "seen"
    hook = tmp_path / "hook.sh"
    hook.write_text(
        f'#!/bin/sh\necho "$CORRAL_BRANCH $CORRAL_BASE_REF $CORRAL_TASK_ID $PWD" > {seen}\n'
    )
    hook.chmod(0o755)
    task = _add(cli, "a.txt")
    env = {"CORRAL_WORKTREE_LAND": "command", "CORRAL_WORKTREE_LAND_COMMAND": str(hook)}
    assert 0 == _work(cli, repo, agent, tasks=1, env=env).code
    branch, base, task_id, cwd = seen.read_text().split()
    assert (f"corral/w1/{task}", "main", task) == (branch, base, task_id)
    assert str(repo / ".corral" / "worktrees") == os.path.dirname(cwd)
    assert ("done", {task: "kept"}) == (_show(cli, task)["status"], _branches(cli, repo))


def test_a_failing_land_command_fails_the_run_with_its_words(cli, repo, agent, tmp_path):
    """The land command exits 1: the run fails with its status and the tail of its output."""
    task = _add(cli, "a.txt", "--max-attempts", "1")
    env = {
        "CORRAL_WORKTREE_LAND": "command",
        "CORRAL_WORKTREE_LAND_COMMAND": "sh -c 'echo no remote here >&2; exit 1'",
    }
    assert 0 == _work(cli, repo, agent, tasks=1, env=env).code
    shown = _show(cli, task)
    assert "failed" == shown["status"]
    assert "land command exited with status 1: no remote here" == shown["last_error"]


def test_a_dirty_base_checkout_keeps_the_branch_instead_of_failing(cli, repo, agent):
    """Someone edits, in main's checkout, the file the task changed: the task is done, its
    branch kept for `corral land`."""
    (repo / "a.txt").write_text("edited, not committed\n")
    git(repo, "add", "a.txt")
    task = _add(cli, "a.txt")
    assert 0 == _work(cli, repo, agent, tasks=1).code
    assert ("done", {task: "kept"}) == (_show(cli, task)["status"], _branches(cli, repo))


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("land", "t-nope"), 2, "task"),
        (("land",), 2, "id"),
    ],
)
def test_land_refuses_what_it_cannot_land(cli, repo, args, code, words):
    """Unknown task, or none given: an error line naming it and the documented exit code."""
    ran = cli(*args, "--repo", str(repo))
    last = ran.err.strip().splitlines()[-1]
    assert (code, True) == (ran.code, last.startswith("corral: error:") and words in last)


def test_land_refuses_a_task_that_is_not_done(cli, repo):
    """A ready task has nothing kept to land: exit 1, nothing written."""
    task = cli("add", "not yet").out.strip()
    ran = cli("land", task, "--repo", str(repo))
    assert (1, f"corral: error: cannot land task {task}: it is ready, not done\n") == (
        ran.code,
        ran.err,
    )


def test_bad_land_settings_are_refused_with_the_key(cli, repo):
    """worktree.land must be one of the modes; command needs a command."""
    bad = cli("config", "show", env={"CORRAL_WORKTREE_LAND": "push"})
    assert 2 == bad.code and "worktree_land" in bad.err and "merge, keep, command" in bad.err
    empty = cli("config", "show", env={"CORRAL_WORKTREE_LAND": "command"})
    assert 2 == empty.code and "worktree_land_command" in empty.err
