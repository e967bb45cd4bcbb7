"""Where a task's work ends when its run is in a worktree (`worker start --worktree`), as a
user runs it: corral commits what the agent left, an empty run is not landed, a task that
runs again keeps its worktree through every clean-up, and `show`, `branches` and the events
say where the work is."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import pytest
from tests.conftest import CORRAL

import corral
from corral.foundation.clock import SystemClock
from corral.foundation.settings import load_settings
from corral.runtime.pool.upkeep import Upkeep

from .conftest import agent_script, git

EDITOR = """#!/bin/sh
# Edit a file and leave it uncommitted, as Claude Code does unless asked to commit.
echo "$PWD" >> "$OBS/$CORRAL_TASK_ID.cwds"
echo "edit by $CORRAL_TASK_ID" >> edit.txt
"""

IDLE = """#!/bin/sh
# Change nothing and succeed, as an agent refused every edit would.
exit 0
"""

PARKED_ONCE = """#!/bin/sh
# First run: edit, leave it uncommitted and exit 75 (try later, as at a usage limit);
# the next run finds the edit where it left it, adds to it and succeeds.
echo "$PWD" >> "$OBS/$CORRAL_TASK_ID.cwds"
if [ -f edit.txt ]; then
    cp edit.txt "$OBS/$CORRAL_TASK_ID.found"
    echo "second part" >> edit.txt
    exit 0
fi
echo "first part" > edit.txt
exit 75
"""

AUTHOR = "Corral Bot <bot@example.com>"


def _run(cli, repo, script, obs, *extra, env=None):
    """One `worker start --once --worktree` in `repo` running `script`."""
    return cli(
        *("worker", "start", "--name", "w1", "--exec", script, "--once", "--worktree"),
        *("--workdir", str(repo), *extra),
        env={"OBS": str(obs), **(env or {})},
    )


def _json(cli, *args):
    done = cli(*args, "--json")
    assert 0 == done.code, done.err
    return json.loads(done.out)


def _branch_state(cli, repo, task):
    [state] = [s for s in _json(cli, "branches", "--repo", str(repo)) if s["task_id"] == task]
    return state


def _events(cli, task, name):
    return [e for e in _json(cli, "events", "--task", task) if e["name"] == name]


def test_an_edit_left_uncommitted_is_committed_by_corral_and_landed(cli, repo, tmp_path):
    """commit = auto: the agent's uncommitted edit is committed with the task's message and
    the configured author, landed on main, and recorded there: show, branches and the
    task.landed event name the same commit, which is on main."""
    script, obs = agent_script(tmp_path, EDITOR)
    task = cli("add", "Fix the parser").out.strip()
    ran = _run(cli, repo, script, obs, env={"CORRAL_WORKTREE_AUTHOR": AUTHOR})
    assert 0 == ran.code, ran.err
    shown = _json(cli, "show", task)
    assert "done" == shown["status"]
    main = git(repo, "rev-parse", "main")
    assert {"outcome": "landed", "merged_commit": main} == {
        k: shown["work"][k] for k in ("outcome", "merged_commit")
    }
    assert f"edit by {task}\n" == (repo / "edit.txt").read_text()
    run = _json(cli, "runs", "--task", task)[0]
    log = git(repo, "log", "-1", "--format=%an <%ae>|%B", "main^2")
    assert f"{AUTHOR}|Fix the parser\n\ncorral task {task}, run {run['id']}" == log
    assert "" == git(repo, "ls-tree", "-r", "--name-only", "main", ".corral")
    state = _branch_state(cli, repo, task)
    expected = {"where": "landed", "state": "landed", "sha": main, "pr_url": None}
    assert expected == {k: state[k] for k in expected}
    assert [main] == [e["data"]["merged_commit"] for e in _events(cli, task, "task.landed")]


def test_commit_agent_leaves_the_edit_to_a_backup_that_land_then_lands(cli, repo, tmp_path):
    """commit = agent (and on_empty = done, today's behaviour): the uncommitted edit counts
    for nothing, the task is done with no change and the edit in a backup ref recorded on
    it; `corral land` lands that backup's work on main."""
    script, obs = agent_script(tmp_path, EDITOR)
    task = cli("add", "Edit").out.strip()
    env = {"CORRAL_WORKTREE_COMMIT": "agent", "CORRAL_WORKTREE_ON_EMPTY": "done"}
    assert 0 == _run(cli, repo, script, obs, env=env).code
    shown = _json(cli, "show", task)
    assert ("done", "no_change") == (shown["status"], shown["work"]["outcome"])
    [backup] = shown["work"]["backup_refs"]
    assert f"edit by {task}\n" == git(repo, "show", f"{backup}:edit.txt") + "\n"
    assert not (repo / "edit.txt").exists()
    assert [] == _events(cli, task, "task.landed")
    state = _branch_state(cli, repo, task)
    assert ("no_change", [backup]) == (state["state"], state["backup_refs"])
    retried = cli("retry", task)
    assert 1 == retried.code
    assert f"in backup ref {backup}: land it with `corral land {task}`" in retried.err
    landed = cli("land", task, "--repo", str(repo))
    assert 0 == landed.code, landed.err
    assert f"edit by {task}\n" == (repo / "edit.txt").read_text()
    state = _branch_state(cli, repo, task)
    assert ("landed", "landed") == (state["where"], state["state"])
    assert "deleted outside corral" not in cli("show", task).out


@pytest.mark.parametrize("on_empty", ["fail", "done"])
def test_a_run_that_changes_nothing_lands_nothing(cli, repo, tmp_path, on_empty):
    """No commit and nothing to commit: `fail` fails the run with "the run changed nothing",
    `done` ends it done; either way no task.landed event, main unchanged, outcome no_change."""
    script, obs = agent_script(tmp_path, IDLE)
    before = git(repo, "rev-parse", "main")
    task = cli("add", "Nothing", "--max-attempts", "1").out.strip()
    _run(cli, repo, script, obs, env={"CORRAL_WORKTREE_ON_EMPTY": on_empty})
    shown = _json(cli, "show", task)
    expected = {"fail": ("failed", "the run changed nothing"), "done": ("done", None)}[on_empty]
    assert expected == (shown["status"], shown["last_error"])
    assert "no_change" == shown["work"]["outcome"]
    assert [] == _events(cli, task, "task.landed")
    assert before == git(repo, "rev-parse", "main")


def test_a_parked_tasks_worktree_survives_every_clean_up_and_is_where_it_resumes(
    cli, repo, tmp_path, monkeypatch
):
    """Exit 75 (deferred, as at a usage limit) with an uncommitted edit: the worktree stays
    through leave, `worktree prune`, `reconcile`, `prune` (retention) and an orchestrator's
    periodic upkeep; the next run starts in the same path with the edit there, and lands."""
    script, obs = agent_script(tmp_path, PARKED_ONCE)
    task = cli("add", "Two parts").out.strip()
    assert 0 == _run(cli, repo, script, obs, "--defer-delay", "0").code
    assert "ready" == _json(cli, "show", task)["status"]
    [path] = (obs / f"{task}.cwds").read_text().split()
    assert 0 == cli("worktree", "prune", "--repo", str(repo)).code
    assert 0 == cli("reconcile", "--repo", str(repo)).code
    assert 0 == cli("prune", "--finished-older-than", "1s", "--events-older-than", "0").code
    monkeypatch.chdir(repo)
    store = corral.open_store(cli.db)
    try:
        settings = load_settings({"CORRAL_DB": cli.db})
        log = logging.getLogger("test.upkeep")
        Upkeep(store, settings=settings, db=cli.db, clock=SystemClock(), log=log).reconcile()
    finally:
        store.close()
    assert "first part\n" == Path(path, "edit.txt").read_text()
    assert 0 == _run(cli, repo, script, obs).code
    assert [path, path] == (obs / f"{task}.cwds").read_text().split()
    assert "first part\n" == (obs / f"{task}.found").read_text()
    assert "first part\nsecond part\n" == (repo / "edit.txt").read_text()
    assert not os.path.exists(path)


def test_a_removed_worktrees_backup_is_where_the_next_run_starts(cli, repo, tmp_path):
    """A failed task's worktree goes (its edit to a backup ref recorded on the task); after
    `corral retry` the next run starts from that backup, not from the base."""
    failing = agent_script(tmp_path, 'echo "draft" > edit.txt\nexit 1\n'.join(("#!/bin/sh\n", "")))
    task = cli("add", "Retry me", "--max-attempts", "1").out.strip()
    _run(cli, repo, *failing)
    shown = _json(cli, "show", task)
    assert "failed" == shown["status"]
    [backup] = shown["work"]["backup_refs"]
    assert 0 == cli("retry", task).code
    (tmp_path / "next").mkdir()
    script, obs = agent_script(tmp_path / "next", PARKED_ONCE)
    assert 0 == _run(cli, repo, script, obs).code
    assert "draft\n" == (obs / f"{task}.found").read_text()
    assert "draft\nsecond part\n" == (repo / "edit.txt").read_text()
    assert "done" == _json(cli, "show", task)["status"]
    assert backup in _json(cli, "show", task)["work"]["backup_refs"]


def test_land_says_who_deleted_a_branch(cli, repo, tmp_path):
    """A landed task's branch, deleted by corral: land names corral and that the base has
    its work; a kept branch (its worktree kept too) deleted by hand: "deleted outside
    corral"."""
    script, obs = agent_script(tmp_path, EDITOR)
    landed = cli("add", "Landed").out.strip()
    assert 0 == _run(cli, repo, script, obs).code
    again = cli("land", landed, "--repo", str(repo))
    assert 1 == again.code
    assert "was deleted by corral, holding nothing main lacked" in again.err
    kept = cli("add", "Kept").out.strip()
    assert 0 == _run(cli, repo, script, obs, env={"CORRAL_WORKTREE_LAND": "keep"}).code
    branch = _json(cli, "show", kept)["branch"]
    assert "kept" == _branch_state(cli, repo, kept)["state"]
    assert "kept" == _json(cli, "show", kept)["work"]["outcome"]
    git(
        repo,
        "worktree",
        "remove",
        "--force",
        str(repo / ".corral" / "worktrees" / branch.replace("/", "-")),
    )
    git(repo, "branch", "-D", branch)
    gone = cli("land", kept, "--repo", str(repo))
    assert (1, True) == (gone.code, "no longer exists (deleted outside corral)" in gone.err)


SELF_REPORTING = """#!/bin/sh
# Edit without committing, then report the task itself, as an agent told to may do.
echo "edit by $CORRAL_TASK_ID" >> edit.txt
exec "$CORRAL" "$REPORT" "$CORRAL_TASK_ID"
"""


@pytest.mark.parametrize("report", ["done", "submit"])
def test_an_agent_that_reports_its_own_task_still_gets_its_edit_committed(
    cli, repo, tmp_path, report
):
    """The agent runs `corral done` (its edit then lands on main) or `corral submit` (its
    branch, in review, holds the edit) before corral commits: corral commits anyway."""
    script, obs = agent_script(tmp_path, SELF_REPORTING)
    task = cli("add", "Self-reported").out.strip()
    ran = _run(cli, repo, script, obs, env={"CORRAL": CORRAL, "REPORT": report})
    assert 0 == ran.code, ran.err
    shown = _json(cli, "show", task)
    if report == "done":
        assert ("done", "landed") == (shown["status"], shown["work"]["outcome"])
        assert f"edit by {task}\n" == (repo / "edit.txt").read_text()
    else:
        assert ("in_review", "in_review") == (shown["status"], shown["work"]["outcome"])
        assert f"edit by {task}" == git(repo, "show", f"{shown['branch']}:edit.txt")
