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
    only that commit, and the task goes back to its agent with the step's output."""
    task, code = _run(cli, repo, tmp_path, "broken")
    assert 0 == code  # `--once`: the one task's run went back to its agent, not failed
    shown = json.loads(cli("show", task, "--json").out)
    assert "moved" == git(repo, "log", "-1", "--format=%s", "main")
    [run] = json.loads(cli("runs", "--task", task, "--json").out)
    assert ("ready", "deferred") == (shown["status"], run["outcome"])
    assert run["error"].startswith("verify failed: `sh -c")
    assert "broken is on the base" in run["error"]


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


# A verify step during which main moves on (another task landed meanwhile): it counts its
# runs in $COUNT and commits to main on the first $MOVES of them.
MOVING_VERIFY = """#!/bin/sh
n=$(( $(cat "$COUNT" 2>/dev/null || echo 0) + 1 )); echo "$n" > "$COUNT"
if [ "$n" -le "$MOVES" ]; then
  echo "$n" > "$MAIN/late-$n" && git -C "$MAIN" add "late-$n" && git -C "$MAIN" commit -qm "late $n"
fi
"""


def _run_moving(cli: Any, repo: Path, tmp_path: Path, moves: int) -> tuple[str, int, Path]:
    script, _ = agent_script(tmp_path, '#!/bin/sh\necho x > "$CORRAL_TASK_ID.txt"\n')
    verify = tmp_path / "verify.sh"
    verify.write_text(MOVING_VERIFY)
    verify.chmod(0o755)
    count = tmp_path / "count"
    task = cli("add", "edit").out.strip()
    ran = cli(
        *("worker", "start", "--name", "w", "--exec", script, "--once", "--worktree"),
        *("--workdir", str(repo)),
        env={"MAIN": str(repo), "COUNT": str(count), "MOVES": str(moves),
             "CORRAL_WORKTREE_VERIFY": str(verify)},
    )  # fmt: skip
    return task, ran.code, count


def test_a_base_that_moved_during_the_step_is_merged_in_and_verified_again(
    cli: Any, repo: Path, tmp_path: Path
) -> None:
    """main moved while the step ran: nothing lands on the unverified merge; the new base
    is merged in, the step runs again, and that verified result is what lands."""
    task, code, count = _run_moving(cli, repo, tmp_path, moves=1)
    assert (0, "2") == (code, count.read_text().strip())
    shown = json.loads(cli("show", task, "--json").out)
    assert "done" == shown["status"]
    files = set(git(repo, "ls-tree", "--name-only", "main").split())
    assert {f"{task}.txt", "late-1"} <= files
    landed = json.loads(cli("branches", "--repo", str(repo), "--json").out)[0]["merged_commit"]
    assert git(repo, "rev-parse", "main") == landed


def test_a_base_that_keeps_moving_lands_nothing_unverified(
    cli: Any, repo: Path, tmp_path: Path
) -> None:
    """main moved during every one of the three steps: the run fails, main has no commit
    of the task's, and the error says why."""
    task, code, count = _run_moving(cli, repo, tmp_path, moves=99)
    assert (1, "3") == (code, count.read_text().strip())
    shown = json.loads(cli("show", task, "--json").out)
    assert "the base moved during each of 3 verify steps" in shown["last_error"]
    assert f"{task}.txt" not in git(repo, "ls-tree", "--name-only", "main").split()
