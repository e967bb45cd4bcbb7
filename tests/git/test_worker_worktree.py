"""`corral worker start --worktree` in a real repository, as a user runs it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from tests.conftest import CORRAL, allowing
from tests.runtime.conftest import wait_until

from .conftest import agent_script, git

AGENT = """#!/bin/sh
# Record what the task saw, then commit one line of work on its branch.
seen="$OBS/$CORRAL_TASK_ID"
echo "$PWD" > "$seen.cwd"
echo "$CORRAL_WORKTREE_PATH" > "$seen.path"
echo "$CORRAL_BRANCH" > "$seen.branch"
printf '%s' "$CORRAL_REVIEW_NOTE" > "$seen.note"
cat > "$seen.prompt"
echo "work by $CORRAL_WORKER_ID" >> work.txt
git add work.txt && git commit --quiet -m "work on $CORRAL_TASK_ID"
"""


@pytest.fixture
def agent(tmp_path: Path) -> tuple[str, Path]:
    """The agent script and the folder where it records what it saw."""
    return agent_script(tmp_path, AGENT)


def _start(cli, repo, agent, name, *extra, env=None):
    script, obs = agent
    return cli(
        *("worker", "start", "--name", name, "--exec", script, "--once", "--worktree"),
        *("--workdir", str(repo), *extra),
        env={"OBS": str(obs), **(env or {})},
    )


def test_a_review_task_runs_in_its_worktree_and_waits_there_for_review(cli, repo, agent):
    """In review after success; the worktree stays; the run keeps base and final commits."""
    task = cli("add", "edit", "--review").out.strip()
    started = _start(cli, repo, agent, "w1")
    assert 0 == started.code, started.err
    shown = json.loads(cli("show", task, "--json").out)
    assert ("in_review", f"corral/w1/{task}") == (shown["status"], shown["branch"])
    _, obs = agent
    path = (obs / f"{task}.path").read_text().strip()
    assert path == (obs / f"{task}.cwd").read_text().strip()
    assert str(repo / ".corral" / "worktrees" / f"corral-w1-{task}") == path
    assert os.path.isdir(path)
    run = json.loads(cli("runs", "--task", task, "--json").out)[0]
    assert git(repo, "rev-parse", "main") == run["base_commit"]
    assert git(repo, "rev-parse", f"corral/w1/{task}") == run["final_commit"]
    stat = json.loads(cli("review", "show", task, "--repo", str(repo), "--json").out)["diff_stat"]
    assert "work.txt | 1 +" in stat


def test_review_show_patch_prints_the_whole_diff_after_the_stat(cli, repo, agent):
    """`--patch` adds the branch's diff against its base, in the text and as JSON `diff`;
    without it the diff is not read (JSON `diff` is null)."""
    task = cli("add", "edit", "--review").out.strip()
    assert 0 == _start(cli, repo, agent, "w1").code
    plain = json.loads(cli("review", "show", task, "--repo", str(repo), "--json").out)
    patched = cli("review", "show", task, "--repo", str(repo), "--patch")
    as_json = json.loads(cli("review", "show", task, "--repo", str(repo), "--patch", "--json").out)
    assert None is plain["diff"]
    assert (0, "") == (patched.code, patched.err)
    assert "work.txt | 1 +" in patched.out and "diff --git a/work.txt b/work.txt" in patched.out
    assert patched.out.index("| 1 +") < patched.out.index("diff --git")
    assert as_json["diff"].startswith("diff --git a/work.txt b/work.txt")


def test_approve_at_the_commit_review_show_named(cli, repo, agent):
    """`review show` names the head its diff is of, and the command that approves exactly
    that; once the branch has moved, that command is refused (exit 1, one line) and the
    task stays in review; a malformed commit is exit 2."""
    task = cli("add", "edit", "--review").out.strip()
    assert 0 == _start(cli, repo, agent, "w1").code
    head = git(repo, "rev-parse", f"corral/w1/{task}")
    shown = cli("review", "show", task, "--repo", str(repo))
    command = f"corral approve {task} --commit {head[:12]}"
    assert f"head: {head} (to approve what is shown: {command})" in shown.out
    as_json = json.loads(cli("review", "show", task, "--repo", str(repo), "--json").out)
    assert head == as_json["head"]
    bad = cli("approve", task, "--repo", str(repo), "--commit", "HEAD~1")
    assert (2, 1) == (bad.code, len(bad.err.splitlines()))
    assert "commit: expected a commit id of 7 to 64 hexadecimal digits" in bad.err
    tree = repo / ".corral" / "worktrees" / f"corral-w1-{task}"
    (tree / "late.txt").write_text("after the review\n")
    git(tree, "add", "late.txt")
    git(tree, "commit", "-q", "-m", "late")
    moved = cli("approve", task, "--repo", str(repo), "--commit", head[:12])
    assert (1, 1) == (moved.code, len(moved.err.splitlines()))
    assert "review it again" in moved.err
    assert "in_review" == json.loads(cli("show", task, "--json").out)["status"]
    now = git(repo, "rev-parse", f"corral/w1/{task}")
    assert 0 == cli("approve", task, "--repo", str(repo), "--commit", now).code


def test_changes_requested_resume_on_the_same_branch_with_the_note(cli, repo, agent):
    """Another worker picks it up on the same branch and worktree; the note reaches it in the
    environment and the prompt; then approve and merge land both commits and clean up."""
    task = cli("add", "edit", "--review").out.strip()
    assert 0 == _start(cli, repo, agent, "w1").code
    assert 0 == cli("request-changes", task, "--note", "say $HOME plainly").code
    assert 0 == _start(cli, repo, agent, "w2").code
    _, obs = agent
    assert "say $HOME plainly" == (obs / f"{task}.note").read_text()
    assert "say $HOME plainly" in (obs / f"{task}.prompt").read_text()
    assert f"corral/w1/{task}" == (obs / f"{task}.branch").read_text().strip()
    assert 0 == cli("approve", task, "--repo", str(repo)).code
    merged = cli("merge", task, "--repo", str(repo), "--json")
    assert 0 == merged.code, merged.err
    assert 2 == len((repo / "work.txt").read_text().splitlines())
    listed = json.loads(cli("worktree", "list", "--repo", str(repo), "--json").out)
    assert [] == listed["worktrees"]
    assert "" == git(repo, "branch", "--list", "corral/*")


def test_a_task_without_review_lands_and_leaves_no_worktree_or_branch(cli, repo, agent):
    """Done: its commit is on main, the worktree and the branch are gone."""
    task = cli("add", "edit").out.strip()
    assert 0 == _start(cli, repo, agent, "w1").code
    assert "done" == json.loads(cli("show", task, "--json").out)["status"]
    assert not (repo / ".corral" / "worktrees" / f"corral-w1-{task}").exists()
    assert "" == git(repo, "branch", "--list", "corral/*")
    assert "work by" in (repo / "work.txt").read_text()


def test_review_show_of_a_task_that_landed_says_so_and_shows_what_landed(cli, repo, agent):
    """Its branch deleted by corral: `review show` exits 0, says where it landed, and shows
    the landed commit's diff stat, never "deleted outside corral"."""
    task = cli("add", "edit").out.strip()
    assert 0 == _start(cli, repo, agent, "w1").code
    shown = cli("review", "show", task, "--repo", str(repo))
    landed = git(repo, "rev-parse", "main")
    assert (0, "") == (shown.code, shown.err)
    assert f"landed at {landed} (branch deleted by corral)" in shown.out
    assert "work.txt" in shown.out and "outside corral" not in shown.out


def test_keep_worktrees_keeps_them(cli, repo, agent):
    """--keep-worktrees: the finished task's worktree is still there."""
    task = cli("add", "edit").out.strip()
    assert 0 == _start(cli, repo, agent, "w1", "--keep-worktrees").code
    assert (repo / ".corral" / "worktrees" / f"corral-w1-{task}" / "work.txt").is_file()


def test_a_failing_setup_command_fails_the_run_clearly(cli, repo, agent, tmp_path):
    """worktree.setup exits 1: the task fails with the setup's words; the agent never ran."""
    config = tmp_path / "config.toml"
    config.write_text("[worktree]\nsetup = \"sh -c 'echo no node here >&2; exit 1'\"\n")
    task = cli("add", "edit", "--max-attempts", "1").out.strip()
    _, obs = agent
    started = _start(cli, repo, agent, "w1", env={"CORRAL_CONFIG": str(config)})
    assert 1 == started.code
    shown = json.loads(cli("show", task, "--json").out)
    assert "failed" == shown["status"]
    assert "worktree setup" in shown["last_error"] and "no node here" in shown["last_error"]
    assert not (obs / f"{task}.cwd").exists()


def test_git_missing_fails_the_start_with_exit_code_3(cli, repo, agent, tmp_path):
    """No git on PATH: one line naming git, exit 3, no worker registered."""
    started = _start(cli, repo, agent, "w1", env={"PATH": str(tmp_path / "empty")})
    assert (3, 1) == (started.code, len(started.err.splitlines()))
    assert "git" in started.err
    assert [] == json.loads(cli("worker", "list", "--json").out)


SLEEPER = """#!/bin/sh
echo $$ > "$OBS/agent.pid"
if [ -n "$COMMIT" ]; then
    echo "committed" > done.txt && git add done.txt && git commit --quiet -m "part one"
fi
echo "not committed yet" > draft.txt
touch "$OBS/working"
exec sleep 60
"""


def _killed_mid_task(cli, repo, tmp_path, *, commit: bool) -> tuple[str, Path]:
    """Start a worker whose agent may commit, then SIGKILL both mid-task; (task, worktree)."""
    obs = tmp_path / "obs"
    obs.mkdir()
    script = tmp_path / "sleeper.sh"
    script.write_text(SLEEPER)
    script.chmod(0o755)
    task = cli("add", "long edit", "--backoff", "0").out.strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env.update(FAST, CORRAL_DB=cli.db, **allowing({"OBS": str(obs), "COMMIT": "yes" * commit}))
    worker = subprocess.Popen(
        [
            CORRAL,
            "worker",
            "start",
            "--name",
            "w1",
            "--exec",
            str(script),
            "--worktree",
            "--workdir",
            str(repo),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        wait_until((obs / "working").exists, 30)
        live = json.loads(cli("worktree", "prune", "--repo", str(repo), "--json").out)
        assert [] == live["removed"]  # a live claim uses it
        # The runner first: killed second, it could see its agent die and report the run.
        os.killpg(worker.pid, signal.SIGKILL)
        os.kill(int((obs / "agent.pid").read_text()), signal.SIGKILL)
    finally:
        worker.wait(timeout=10)
    path = repo / ".corral" / "worktrees" / f"corral-w1-{task}"
    assert path.is_dir()

    removed = []

    def reconciled() -> bool:
        done = json.loads(cli("reconcile", "--repo", str(repo), "--json", env=FAST).out)
        removed.append(done.get("worktrees_removed", 0))
        return json.loads(cli("show", task, "--json").out)["status"] == "ready"

    wait_until(reconciled, 30, interval_s=0.1)
    assert 0 == sum(removed)  # the task runs again: its worktree is its next run's
    assert "not committed yet\n" == (path / "draft.txt").read_text()
    return task, path


FAST = {"CORRAL_HEARTBEAT_INTERVAL_S": "0.05", "CORRAL_DEAD_AFTER_MISSED": "1"}

FINISHER = """#!/bin/sh
# Record where it ran and what it found, then add a line and leave it uncommitted.
echo "$PWD" > "$OBS/$CORRAL_TASK_ID.cwd"
cat draft.txt > "$OBS/$CORRAL_TASK_ID.draft" 2>/dev/null
echo "finished" >> draft.txt
"""


@pytest.mark.parametrize("commit", [True, False])
def test_kill_9_mid_task_then_reconcile_keeps_the_worktree_for_the_next_run(
    cli, repo, tmp_path, commit
):
    """The worker and its agent die; reconcile returns the task and keeps its worktree; the
    next run, on another worker, starts in the same path with the draft there, and lands it
    (committed by corral) with the commit the first run made, if any."""
    task, path = _killed_mid_task(cli, repo, tmp_path, commit=commit)
    (tmp_path / "next").mkdir()
    script, obs = agent_script(tmp_path / "next", FINISHER)
    assert 0 == _start(cli, repo, (script, obs), "w2").code
    assert str(path) == (obs / f"{task}.cwd").read_text().strip()
    assert "not committed yet\n" == (obs / f"{task}.draft").read_text()
    assert "done" == json.loads(cli("show", task, "--json").out)["status"]
    assert "not committed yet\nfinished\n" == (repo / "draft.txt").read_text()
    assert commit == (repo / "done.txt").exists()


SUBMITTER = """#!/bin/sh
echo "fix" > fix.txt && git add fix.txt && git commit --quiet -m fix
exec "$CORRAL" submit "$CORRAL_TASK_ID" --note "please review" --pr-url https://example.com/pr/1
"""


def test_an_agent_submits_its_own_work_under_its_token(cli, repo, tmp_path):
    """`corral submit` from the task's command: in_review with its note; the run is done."""
    script = tmp_path / "submitter.sh"
    script.write_text(SUBMITTER)
    script.chmod(0o755)
    task = cli("add", "fix it").out.strip()
    started = cli(
        *("worker", "start", "--name", "w1", "--exec", str(script), "--once", "--worktree"),
        *("--workdir", str(repo)),
        env={"CORRAL": CORRAL},
    )
    assert 0 == started.code, started.err
    shown = json.loads(cli("review", "show", task, "--repo", str(repo), "--json").out)
    assert ("in_review", "please review") == (shown["task"]["status"], shown["review"]["note"])
    assert "https://example.com/pr/1" == shown["review"]["pr_url"]
    assert "done" == json.loads(cli("runs", "--task", task, "--json").out)[0]["outcome"]


def test_a_repo_that_is_not_one_is_exit_2(cli, tmp_path):
    """--repo naming a folder that is not in a repository, or no folder at all: exit 2."""
    for path in (tmp_path, tmp_path / "missing"):
        listed = cli("worktree", "list", "--repo", str(path))
        assert (2, 1) == (listed.code, len(listed.err.splitlines()))


REBASING_AGENT = """#!/bin/sh
# Commit work; when the prompt says approval needs a rebase, rebase onto the base first.
cat > "$OBS/$CORRAL_TASK_ID.prompt"
if grep -q "git rebase $CORRAL_BASE_REF" "$OBS/$CORRAL_TASK_ID.prompt"; then
    git rebase --quiet "$CORRAL_BASE_REF" || exit 1
fi
echo "work" >> work.txt
git add work.txt && git commit --quiet -m "work on $CORRAL_TASK_ID"
"""


def test_require_rebase_refuses_a_branch_behind_its_base_until_it_is_rebased(cli, repo, tmp_path):
    """The base moves while the task waits in review: approve refuses (exit 1, one line);
    the changes-requested run is told to rebase, does, and is approved and merged."""
    script, obs = agent_script(tmp_path, REBASING_AGENT)
    rebase = {"CORRAL_REVIEW_REQUIRE_REBASE": "true"}
    task = cli("add", "edit", "--review").out.strip()
    assert 0 == _start(cli, repo, (script, obs), "w1", env=rebase).code
    (repo / "other.txt").write_text("meanwhile on main\n")
    git(repo, "add", "other.txt")
    git(repo, "commit", "--quiet", "-m", "main moves on")
    refused = cli("approve", task, "--repo", str(repo), env=rebase)
    assert (1, 1) == (refused.code, len(refused.err.splitlines())), refused.err
    assert f"branch corral/w1/{task} is not on top of main (require_rebase)" in refused.err
    assert 0 == cli("approve", task, "--repo", str(repo)).code  # without it: approved as is
    assert 0 == cli("request-changes", task, "--note", "tidy up").code
    assert 0 == _start(cli, repo, (script, obs), "w2", env=rebase).code
    assert "(`git rebase main`)" in (obs / f"{task}.prompt").read_text()
    assert 0 == cli("approve", task, "--repo", str(repo), env=rebase).code
    assert 0 == cli("merge", task, "--repo", str(repo)).code
    assert "meanwhile on main\n" == (repo / "other.txt").read_text()
    assert 2 == len((repo / "work.txt").read_text().splitlines())


def test_artifacts_are_taken_from_the_tasks_worktree_before_it_is_removed(cli, repo, agent):
    """With --worktree the globs match in the task's worktree, and the copies outlive it."""
    task = cli("add", "edit").out.strip()
    started = _start(cli, repo, agent, "w1", "--artifacts", "work.txt")
    assert 0 == started.code, started.err
    run = json.loads(cli("runs", "--task", task, "--json").out)[0]
    shown = json.loads(cli("run", "show", run["id"], "--json").out)
    [kept] = shown["artifacts"]
    copy = Path(shown["artifacts_dir"]) / "work.txt"
    assert ("work.txt", copy.read_bytes()) == (kept["path"], (repo / "work.txt").read_bytes())
    assert not (repo / ".corral" / "worktrees" / f"corral-w1-{task}").exists()
