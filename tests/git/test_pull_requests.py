"""`[worktree] land = pr` against a stand-in `gh` (tests/agents/fakes/gh) that records its
arguments and answers from a file the test writes: the runner pushes the branch, opens a
pull request and leaves the task in review with its URL; the reconcile pass settles the
task when the pull request is merged (done, at the forge's commit) or closed unmerged (in
review again, for a person)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
from pathlib import Path

import pytest
from tests.conftest import CORRAL

import corral
from corral.foundation.settings import Settings
from corral.git import pull_requests
from corral.git.task_worktrees import TaskWorktrees
from corral.model.events import EventFilter
from corral.model.reviews import PullRequestState, WorkOutcome
from corral.model.states import TaskStatus
from corral.model.tasks import NewTask
from corral.usecases import reviews

from .conftest import agent_script, commit_file, git
from .test_remote_base import Host, bare, host

__all__ = ["bare"]  # the fixture, shared with the remote base's tests

FAKES = Path(__file__).parents[1] / "agents" / "fakes"
POLICY = Settings(worktree_remote="origin", worktree_land="pr").worktree
LOG = logging.getLogger("test")


@pytest.fixture
def gh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in `gh` first on PATH; its log and its answers' file in `tmp_path`."""
    monkeypatch.setenv("PATH", f"{FAKES}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("GH_LOG", str(tmp_path / "gh.log"))
    monkeypatch.setenv("GH_STATE", str(tmp_path / "gh-state.json"))
    monkeypatch.setenv("GH_CHECKS", str(tmp_path / "gh-checks.json"))
    monkeypatch.setenv("GH_LOGS", str(tmp_path / "gh-logs.json"))
    return tmp_path


def calls(gh: Path) -> list[dict]:
    """What the stand-in `gh` was asked, in order."""
    log = gh / "gh.log"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def answer(gh: Path, url: str, state: str, commit: str | None = None) -> None:
    """Make the stand-in's `gh pr view URL` answer `state` (and the merge commit)."""
    path = gh / "gh-state.json"
    states = json.loads(path.read_text()) if path.exists() else {}
    states[url] = {"mergeCommit": None if commit is None else {"oid": commit}, "state": state}
    path.write_text(json.dumps(states))


def run_to_pr(store, settings, on: Host, title: str = "edit"):
    """A task run on host `on` whose agent commits a file: the runner lands it (opens the
    pull request); the task and its branch."""
    task = corral.enqueue(
        store, NewTask(title=title, description="Make a file."), settings=settings
    )
    branch = run_again(store, settings, on, task.id, f"{task.id}.txt")
    return store.tasks.get_task(task.id), branch


def run_again(store, settings, on: Host, task_id: str, name: str, policy=POLICY) -> str:
    """One run of task `task_id` on host `on` whose agent commits file `name`, landed by
    its runner under `policy`; its branch."""
    worker = corral.register(
        store, corral.NewWorker(name=on.name, hostname=on.name, pid=None), settings=settings
    ).worker
    claim = corral.claim(store, task_id, worker.id, settings=settings)
    runner = TaskWorktrees(
        store, on.trees, worker_name=on.name, base_ref="main", policy=policy, log=LOG
    )
    entered = runner.enter(store.tasks.get_task(task_id), claim.token, worker.id)
    commit_file(entered.path, name, "work\n")
    error = runner.land(
        store.tasks.get_task(task_id), claim.token, runner.final_commit(task_id)
    ).error
    assert None is error
    runner.leave(task_id, claim.token)
    return entered.branch


def test_a_pull_request_is_opened_for_the_pushed_branch_and_the_task_waits_in_review(
    store, settings, bare, tmp_path, gh
):
    """gh is asked once, with whole arguments (the title one argument), after the branch is
    on the remote; the task is in review with the URL; the worktree stays."""
    b = host(tmp_path, bare, "b")
    task, branch = run_to_pr(store, settings, b, title="fix the $HOME; rm -rf / thing")
    review = store.reviews.get_review(task.id)
    assert TaskStatus.IN_REVIEW == task.status
    url = "https://github.example/acme/repo/pull/1"
    assert (url, None) == (review.pr_url, review.pr_state)
    [made] = calls(gh)
    body_file = made["args"][-1]
    expected = ["pr", "create", "--base", "main", "--head", branch]
    expected += ["--title", "fix the $HOME; rm -rf / thing", "--body-file", body_file]
    assert expected == made["args"]
    assert f"Make a file.\n\ncorral task {task.id}\n" == made["body"]
    assert git(bare, "rev-parse", branch) == git(b.clone, "rev-parse", branch)


def test_a_merged_pull_request_makes_the_task_done_at_the_forges_commit(
    store, settings, bare, tmp_path, gh
):
    """While open, a pass changes nothing; once merged (the forge's merge made on the remote),
    the task is done with that commit, its event recorded, and no later pass asks again."""
    b = host(tmp_path, bare, "b")
    task, branch = run_to_pr(store, settings, b)
    url = store.reviews.get_review(task.id).pr_url
    assert ((), ()) == _settled(store)
    assert TaskStatus.IN_REVIEW == store.tasks.get_task(task.id).status
    forge = tmp_path / "forge"
    git(tmp_path, "clone", "--quiet", str(bare), str(forge))
    git(forge, "merge", "--quiet", "--no-ff", "-m", "Merge pull request #1", f"origin/{branch}")
    git(forge, "push", "--quiet", "origin", "main")
    merged = git(forge, "rev-parse", "HEAD")
    answer(gh, url, "MERGED", merged)
    assert ((task.id,), ()) == _settled(store)
    review = store.reviews.get_review(task.id)
    assert TaskStatus.DONE == store.tasks.get_task(task.id).status
    assert (merged, PullRequestState.MERGED) == (review.merged_commit, review.pr_state)
    assert WorkOutcome.LANDED == review.outcome
    events = [e.name for e in store.events.list_events(EventFilter(task_id=task.id))]
    assert "task.pr_merged" in events
    views = len(calls(gh))
    assert ((), ()) == _settled(store)
    assert views == len(calls(gh))


def test_a_pull_request_closed_unmerged_returns_the_task_to_review(
    store, settings, bare, tmp_path, gh
):
    """Closed on the forge: the task stays in review in corral (a person approves, merges or
    asks for changes there), the pull request recorded closed, and no pass asks again."""
    b = host(tmp_path, bare, "b")
    task, _ = run_to_pr(store, settings, b)
    url = store.reviews.get_review(task.id).pr_url
    answer(gh, url, "CLOSED")
    assert ((), (task.id,)) == _settled(store)
    review = store.reviews.get_review(task.id)
    assert TaskStatus.IN_REVIEW == store.tasks.get_task(task.id).status
    assert (url, PullRequestState.CLOSED, None) == (
        review.pr_url,
        review.pr_state,
        review.merged_commit,
    )
    closed = [
        e
        for e in store.events.list_events(EventFilter(task_id=task.id))
        if e.name == "task.pr_closed"
    ]
    assert [f"pull request {url} closed unmerged"] == [e.reason for e in closed]
    views = len(calls(gh))
    assert ((), ()) == _settled(store)
    assert views == len(calls(gh))


def test_the_stand_in_gh_refuses_a_second_pull_request_for_an_open_one(bare, tmp_path, gh):
    """As gh does: `gh pr create` for a head with an open pull request exits 1 naming it;
    once that one is closed, a new one is made."""
    b = host(tmp_path, bare, "b")
    git(b.clone, "push", "--quiet", "origin", "main:refs/heads/topic")
    body = tmp_path / "body.md"
    body.write_text("x\n")
    argv = ["gh", "pr", "create", "--base", "main", "--head", "topic", "--title", "t"]
    argv += ["--body-file", str(body)]

    def create() -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=b.clone, capture_output=True, text=True, check=False)

    first = create().stdout.strip()
    again = create()
    expected = 'a pull request for branch "topic" into branch "main" already exists:\n'
    assert (1, f"{expected}{first}\n") == (again.returncode, again.stderr)
    answer(gh, first, "CLOSED")
    assert "https://github.example/acme/repo/pull/2\n" == create().stdout


def test_changes_requested_on_an_open_pull_request_update_it(store, settings, bare, tmp_path, gh):
    """The next run pushes its commits to the same branch and submits the task again with
    the same URL: gh is asked to look, never to create a second pull request."""
    b = host(tmp_path, bare, "b")
    task, branch = run_to_pr(store, settings, b)
    url = store.reviews.get_review(task.id).pr_url
    reviews.request_changes(store, task.id, note="add a test")
    assert branch == run_again(store, settings, b, task.id, "test.txt")
    review = store.reviews.get_review(task.id)
    assert TaskStatus.IN_REVIEW == store.tasks.get_task(task.id).status
    assert (url, None) == (review.pr_url, review.pr_state)
    asked = [c["args"][:2] for c in calls(gh)]
    assert [["pr", "create"], ["pr", "view"]] == asked
    pushed = git(bare, "show", "--name-only", "--format=", branch)
    assert "test.txt" == pushed
    events = [e.name for e in store.events.list_events(EventFilter(task_id=task.id))]
    assert 2 == events.count("task.submitted")


def test_a_pull_request_closed_then_sent_back_is_reopened(store, settings, bare, tmp_path, gh):
    """Closed unmerged, then changes requested in corral: the next run reopens the same
    pull request (`pr_reopen_command`), the task in review with it open again."""
    b = host(tmp_path, bare, "b")
    task, _ = run_to_pr(store, settings, b)
    url = store.reviews.get_review(task.id).pr_url
    answer(gh, url, "CLOSED")
    assert ((), (task.id,)) == _settled(store)
    reviews.request_changes(store, task.id, note="try again")
    run_again(store, settings, b, task.id, "again.txt")
    review = store.reviews.get_review(task.id)
    assert (TaskStatus.IN_REVIEW, url, None) == (
        store.tasks.get_task(task.id).status,
        review.pr_url,
        review.pr_state,
    )
    assert ["pr", "reopen", url] == calls(gh)[-1]["args"]
    assert 1 == sum(1 for c in calls(gh) if c["args"][:2] == ["pr", "create"])
    assert ((), ()) == _settled(store)  # open again: the reconciler looks, and waits


@pytest.mark.parametrize("reopen", ["", "false {url}"])
def test_without_a_reopen_a_new_pull_request_is_opened(store, settings, bare, tmp_path, gh, reopen):
    """`pr_reopen_command = ""`, or one the forge refuses: the closed one stays closed and
    the run opens a new one, whose URL the task then carries."""
    b = host(tmp_path, bare, "b")
    task, _ = run_to_pr(store, settings, b)
    answer(gh, store.reviews.get_review(task.id).pr_url, "CLOSED")
    _settled(store)
    reviews.request_changes(store, task.id, note="try again")
    policy = Settings(
        worktree_remote="origin", worktree_land="pr", worktree_pr_reopen_command=reopen
    ).worktree
    run_again(store, settings, b, task.id, "again.txt", policy=policy)
    assert "https://github.example/acme/repo/pull/2" == store.reviews.get_review(task.id).pr_url
    assert [] == [c for c in calls(gh) if c["args"][:2] == ["pr", "reopen"]]


def test_a_pr_command_that_prints_no_url_fails_the_run(store, settings, bare, tmp_path, gh):
    """`pr_command` exits 0 without a URL: the run fails, saying so; nothing is submitted."""
    b = host(tmp_path, bare, "b")
    policy = Settings(worktree_remote="origin", worktree_land="pr", worktree_pr_command="true")
    task = corral.enqueue(store, NewTask(title="edit"), settings=settings)
    worker = corral.register(store, corral.NewWorker(name="b", pid=None), settings=settings).worker
    claim = corral.claim(store, task.id, worker.id, settings=settings)
    runner = TaskWorktrees(
        store, b.trees, worker_name="b", base_ref="main", policy=policy.worktree, log=LOG
    )
    entered = runner.enter(store.tasks.get_task(task.id), claim.token, worker.id)
    commit_file(entered.path, "x.txt", "x\n")
    error = runner.land(
        store.tasks.get_task(task.id), claim.token, runner.final_commit(task.id)
    ).error
    assert "pull request: true printed no pull request URL: (no output)" == error
    assert TaskStatus.RUNNING == store.tasks.get_task(task.id).status


def _settled(store) -> tuple[tuple[str, ...], tuple[str, ...]]:
    report = pull_requests.settle(store, POLICY, cwd=os.getcwd(), log=LOG)
    assert report is not None
    return report.merged, report.closed


AGENT = """#!/bin/sh
echo "$CORRAL_TASK_ID" >> "$CORRAL_TASK_ID.txt"
git add -A && git commit --quiet -m "work on $CORRAL_TASK_ID"
"""


def test_a_runner_opens_the_pull_request_and_reconcile_finishes_the_task(bare, tmp_path, gh):
    """`corral worker start --worktree` with land = pr: the run ends with its task in review
    and its pull request's URL; after `corral request-changes`, the next run's commits go to
    the same pull request (gh asked to create once); `corral reconcile` after the merge:
    done, prs_merged 1."""
    b = host(tmp_path, bare, "b")
    script, _ = agent_script(tmp_path, AGENT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env |= {
        "CORRAL_DB": str(tmp_path / "corral.db"),
        "CORRAL_WORKTREE_REMOTE": "origin",
        "CORRAL_WORKTREE_LAND": "pr",
    }

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CORRAL, *args], env=env, cwd=b.clone, capture_output=True, text=True, check=False
        )

    task = cli("add", "make a file").stdout.strip()
    ran = cli("worker", "start", "--name", "b", "--exec", script, "--once", "--worktree")
    assert 0 == ran.returncode, ran.stderr
    shown = json.loads(cli("review", "show", task, "--json").stdout)
    url = "https://github.example/acme/repo/pull/1"
    assert ("in_review", url) == (shown["task"]["status"], shown["review"]["pr_url"])
    assert 0 == cli("request-changes", task, "--note", "say it twice").returncode
    again = cli("worker", "start", "--name", "b", "--exec", script, "--once", "--worktree")
    assert 0 == again.returncode, again.stderr
    shown = json.loads(cli("review", "show", task, "--json").stdout)
    assert ("in_review", url) == (shown["task"]["status"], shown["review"]["pr_url"])
    assert 1 == sum(1 for c in calls(gh) if c["args"][:2] == ["pr", "create"])
    assert f"{task}\n{task}\n" == git(bare, "show", f"{shown['task']['branch']}:{task}.txt") + "\n"
    answer(gh, url, "MERGED", git(bare, "rev-parse", "main"))
    reconciled = cli("reconcile", "--json")
    assert 0 == reconciled.returncode, reconciled.stderr
    assert (1, 0) == (
        json.loads(reconciled.stdout)["prs_merged"],
        json.loads(reconciled.stdout)["prs_closed"],
    )
    assert "done" == json.loads(cli("show", task, "--json").stdout)["status"]


def checks_are(gh: Path, url: str, *checks: dict[str, str]) -> None:
    """Make the stand-in's `gh pr checks URL` answer `checks`."""
    path = gh / "gh-checks.json"
    known = json.loads(path.read_text()) if path.exists() else {}
    path.write_text(json.dumps(known | {url: list(checks)}))


def logs_are(gh: Path, **logs: str) -> None:
    """Make the stand-in's `gh run view RUN --log-failed` print `logs[f"r{RUN}"]`."""
    (gh / "gh-logs.json").write_text(json.dumps({k.removeprefix("r"): v for k, v in logs.items()}))


def check(name: str, bucket: str, run: int) -> dict[str, str]:
    """A GitHub Actions check of run `run`, as `gh pr checks --json` gives one."""
    states = {"pass": "SUCCESS", "fail": "FAILURE", "pending": "IN_PROGRESS"}
    return {
        "name": name,
        "state": states[bucket],
        "bucket": bucket,
        "link": f"https://github.example/acme/repo/actions/runs/{run}/job/{run}0",
        "startedAt": f"2026-11-29T10:{run:02d}:00Z",
    }


def _checks_settled(store) -> tuple[tuple[str, ...], tuple[str, ...]]:
    report = pull_requests.settle(store, POLICY, cwd=os.getcwd(), log=LOG)
    assert report is not None
    return report.checks_failed, report.checks_waiting


def test_failing_checks_go_back_to_the_agent_twice_then_the_task_waits_with_the_log(
    store, settings, bare, tmp_path, gh
):
    """Checks pending: nothing. `test` failed (lint passed): the task is ready on its branch,
    its next run's note the failing check, its link and its log's tail, no attempt spent.
    The same failure seen again after the push (its own checks not started): nothing. A
    second failure: back again (retry 2 of 2). A third: waiting `verify: ...` with the log.
    An answer gives the agent its retries again."""
    b = host(tmp_path, bare, "b")
    task, branch = run_to_pr(store, settings, b)
    url = store.reviews.get_review(task.id).pr_url
    assert ((), ()) == _checks_settled(store)  # none reported yet
    checks_are(gh, url, check("lint", "pass", 1), check("test", "pending", 1))
    assert ((), ()) == _checks_settled(store)
    assert TaskStatus.IN_REVIEW == store.tasks.get_task(task.id).status
    logs_are(gh, r1="test\tpytest\tFAILED tests/test_x.py::test_two - assert 3 == 2\n")
    checks_are(gh, url, check("lint", "pass", 1), check("test", "fail", 1))
    assert ((task.id,), ()) == _checks_settled(store)
    back = store.tasks.get_task(task.id)
    assert (TaskStatus.READY, 0) == (back.status, back.attempts)
    note = store.reviews.get_review(task.id).changes_note or ""
    link = check("test", "fail", 1)["link"]
    assert note.startswith(f"pull request checks failed:\n- test: FAILURE {link}\n")
    assert "FAILED tests/test_x.py::test_two - assert 3 == 2" in note and "lint" not in note
    assert ["run", "view", "1", "--log-failed"] == calls(gh)[-1]["args"]

    assert branch == run_again(store, settings, b, task.id, "fix1.txt")
    assert (TaskStatus.IN_REVIEW, url) == (
        store.tasks.get_task(task.id).status,
        store.reviews.get_review(task.id).pr_url,
    )
    assert ((), ()) == _checks_settled(store)  # the same failure: the push's not in yet
    checks_are(gh, url, check("lint", "pass", 2), check("test", "fail", 2))
    assert ((task.id,), ()) == _checks_settled(store)
    failed = store.events.list_events(EventFilter(task_id=task.id, names=("task.checks_failed",)))
    assert [(1, 2), (2, 2)] == [((e.data or {})["retry"], (e.data or {})["of"]) for e in failed]

    run_again(store, settings, b, task.id, "fix2.txt")
    logs_are(gh, r3="error: the build broke\n")
    checks_are(gh, url, check("test", "fail", 3))
    assert ((), (task.id,)) == _checks_settled(store)
    waits = store.tasks.get_task(task.id)
    assert (TaskStatus.WAITING, 0) == (waits.status, waits.attempts)
    reason = waits.wait_reason or ""
    assert reason.startswith("verify: pull request checks failed (test) after 2 retries")
    assert "error: the build broke" in reason
    assert ((), ()) == _checks_settled(store)  # waiting: no longer looked at

    corral.answer(store, task.id, "the build needs the new flag")
    run_again(store, settings, b, task.id, "fix3.txt")
    checks_are(gh, url, check("test", "fail", 4))
    assert ((task.id,), ()) == _checks_settled(store)  # its retries given again
    assert TaskStatus.READY == store.tasks.get_task(task.id).status


def test_the_stand_in_gh_exits_as_gh_pr_checks_does(bare, tmp_path, gh):
    """`gh pr checks URL --json ...`: 1 with a failure, 8 while one is pending, 0 when all
    passed, each with the JSON of the fields asked for; no checks: exit 1, gh's message."""
    b = host(tmp_path, bare, "b")
    url = "https://github.example/acme/repo/pull/7"
    argv = ["gh", "pr", "checks", url, "--json", "name,bucket"]

    def looked() -> tuple[int, str, str]:
        done = subprocess.run(argv, cwd=b.clone, capture_output=True, text=True, check=False)
        return done.returncode, done.stdout, done.stderr

    assert (1, "", "no checks reported on the 'HEAD' branch\n") == looked()
    for buckets, code in (
        (("pass", "fail", "pending"), 1),
        (("pass", "pending"), 8),
        (("pass",), 0),
    ):
        checks_are(gh, url, *(check(f"c{n}", bucket, n) for n, bucket in enumerate(buckets)))
        shown = [{"name": f"c{n}", "bucket": bucket} for n, bucket in enumerate(buckets)]
        assert (code, shown) == (looked()[0], json.loads(looked()[1]))
