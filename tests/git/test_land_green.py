"""Landing keeps the base green: with `[worktree] verify`, a branch that will land has the
base merged in before the step runs, so the step checks what the land puts on the base;
a red step lands nothing and the task gets the output's tail."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .conftest import agent_script, git

# While the agent works, main moves on: someone commits `broken` (or `fine`) there.
AGENT = """#!/bin/sh
echo "$CORRAL_TASK_ID" > "$CORRAL_TASK_ID.txt"
git add -A && git commit --quiet -m "work on $CORRAL_TASK_ID"
echo moved > "$MAIN/$MOVED" && git -C "$MAIN" add "$MOVED" && git -C "$MAIN" commit -qm moved
"""

# Green only without `broken`: the branch alone passes; merged with the moved main, not.
VERIFY = "sh -c 'ls; test ! -e broken || { echo \"broken is on the base\" >&2; exit 1; }'"


def _run(cli: Any, repo: Path, tmp_path: Path, moved: str) -> tuple[str, int]:
    script, _ = agent_script(tmp_path, AGENT)
    task = cli("add", "edit").out.strip()
    ran = cli(
        *("worker", "start", "--name", "w", "--exec", script, "--once", "--worktree"),
        *("--workdir", str(repo)),
        env={"MAIN": str(repo), "MOVED": moved, "CORRAL_WORKTREE_VERIFY": VERIFY},
    )
    return task, ran.code


def test_the_step_sees_the_moved_base_and_a_red_result_lands_nothing(
    cli: Any, repo: Path, tmp_path: Path
) -> None:
    """main gained `broken` during the run: the merged result fails the step, main keeps
    only that commit, and the task's error carries the step's output."""
    task, code = _run(cli, repo, tmp_path, "broken")
    assert 1 == code  # `--once`: the one task's run failed
    shown = json.loads(cli("show", task, "--json").out)
    assert "moved" == git(repo, "log", "-1", "--format=%s", "main")
    assert shown["last_error"].startswith("verify failed: `sh -c")
    assert "broken is on the base" in shown["last_error"]
    assert "ready" == shown["status"]


def test_a_green_merged_result_lands_with_what_the_step_saw(
    cli: Any, repo: Path, tmp_path: Path
) -> None:
    """main gained `fine`: the step passes on the merged result, which is what lands."""
    task, code = _run(cli, repo, tmp_path, "fine")
    assert 0 == code
    shown = json.loads(cli("show", task, "--json").out)
    assert "done" == shown["status"]
    assert {f"{task}.txt", "fine"} <= set(git(repo, "ls-tree", "--name-only", "main").split())
    merged = json.loads(cli("branches", "--repo", str(repo), "--json").out)[0]["merged_commit"]
    assert git(repo, "rev-parse", "main") == merged
