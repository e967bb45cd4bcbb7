"""An agent run's end as the runner describes it (runtime/worker/command_job.py and
agent_runs.py): the stand-in agents of tests/agents/fakes run as real processes with the
built-in profiles' command lines, and their streams decide the run's `Done`: refused
tools or a question wait for a person, a failed codex turn fails at exit 0, and a usage
limit parks its provider at least `[agents] park_min` (an injected clock)."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import logging
import os
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from corral import FakeClock, NewTask, NewWorker, Settings, Store, enqueue, open_store, register
from corral.model.agents import BUILT_IN, AgentProfile
from corral.model.events import EventFilter
from corral.model.exchange import Action, Held
from corral.runtime.worker.agent_runs import AgentSetup, StreamWatch
from corral.runtime.worker.command_job import CommandJob, prepare, run_prepared
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.reports import Done, report_of

FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"
NOW = datetime(2026, 11, 29, 4, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A SQLite store of the test's own."""
    with open_store(str(tmp_path / "corral.db")) as opened:
        yield opened


def place(store: Store, clock: FakeClock | None = None) -> Workplace:
    """A runner as a run sees it, on an injected clock."""
    return Workplace(
        store=store,
        worker_id="w-test",
        settings=Settings(),
        clock=clock or FakeClock(NOW),
        log=logging.getLogger("test.agent_runs"),
    )


def git_repo(folder: Path) -> Path:
    """A repository with one commit, in `folder`."""
    folder.mkdir()
    for args in (("init", "-q"), ("commit", "-q", "--allow-empty", "-m", "base")):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args],
            cwd=folder,
            check=True,
        )
    return folder


def run_agent(
    store: Store, tmp_path: Path, profile: AgentProfile, title: str, *extra: str
) -> tuple[Done, Path]:
    """One task `title` run by `profile` (a stand-in on PATH) in a fresh repository: its
    Done, and the repository."""
    repo = git_repo(tmp_path / "repo")
    task = enqueue(store, NewTask(title=title))
    agent = AgentSetup(profile=profile, extra_args=extra, provider=profile.provider)
    env = {**os.environ, "PATH": f"{FAKES}:{os.environ['PATH']}"}
    job = CommandJob(
        argv=profile.command, runs_dir=str(tmp_path / "runs"), workdir=str(repo), agent=agent,
        base_env=env,
    )  # fmt: skip
    where = place(store)
    prepared = prepare(
        job, task, token=1, run_id="r-1", worker_id="w-test", db=store.url, namespace="default"
    )
    watch = StreamWatch(
        where, agent, run_id="r-1", task_id=task.id, transcript_path=prepared.spec.transcript_path
    )
    done = run_prepared(
        job,
        prepared,
        clock=where.clock,
        stop=lambda: None,
        on_stall=lambda: None,
        on_resume=lambda: None,
        watch=watch,
    )
    return done, repo


def status(repo: Path) -> list[str]:
    """`git status --short` of the repository, line by line."""
    done = subprocess.run(
        ["git", "status", "--short"], cwd=repo, capture_output=True, text=True, check=True
    )
    return done.stdout.splitlines()


def commits(repo: Path) -> int:
    """How many commits the repository's HEAD has."""
    done = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    )
    return int(done.stdout)


def as_report(done: Done, store: Store) -> tuple[Action, str | None]:
    """What the slot would report for `done`: the action and its reason."""
    now = NOW
    task = enqueue(store, NewTask(title="held"))
    held = Held(
        task=task, token=1, run_id="r-1", lease_expires_at=now, claimed_at=now, deadline_at=None
    )
    report = report_of(held, done)
    return report.action, report.reason


def test_a_claude_run_without_a_permission_mode_is_refused_and_waits(
    store: Store, tmp_path: Path
) -> None:
    """No permission mode (the user chose `default`): claude edits nothing, exits 0 with a
    result of subtype success listing the denied Write: the run is no success but waits,
    "refused: Write" (Action.WAIT). The store's WAIT (task -> waiting) is another part's."""
    done, repo = run_agent(
        store, tmp_path, BUILT_IN["claude"], "fix it", "--permission-mode", "default"
    )
    assert (False, 0, "refused: Write") == (done.success, done.exit_code, done.wait_reason)
    assert [] == status(repo)
    assert (Action.WAIT, "refused: Write") == as_report(done, store)


def test_claude_with_accept_edits_edits_but_a_commit_it_was_asked_for_is_refused_bash(
    store: Store, tmp_path: Path
) -> None:
    """The built-in profile's acceptEdits: the edit is made (uncommitted); asked to
    commit, its Bash tool is denied (acceptEdits allows edits, not git): "refused: Bash"."""
    done, repo = run_agent(store, tmp_path, BUILT_IN["claude"], "fix it and commit it")
    assert ("refused: Bash", 1) == (done.wait_reason, commits(repo))
    (edited,) = status(repo)
    assert edited.startswith("?? fake-edit-t")


def test_a_claude_run_that_may_edit_and_commit_succeeds_with_its_commit(
    store: Store, tmp_path: Path
) -> None:
    """bypassPermissions, asked to commit: the edit committed, a clean tree, success."""
    done, repo = run_agent(
        store, tmp_path, BUILT_IN["claude"], "fix it, then commit", "--dangerously-skip-permissions"
    )
    assert (True, None, 2, []) == (done.success, done.wait_reason, commits(repo), status(repo))


def test_a_claude_question_ends_a_run_that_waits_with_the_question(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AskUserQuestion, then exit 0 (no failure): the run waits, "question: <text>"."""
    monkeypatch.setenv("FAKE_SLEEP", "0")
    done, _ = run_agent(store, tmp_path, BUILT_IN["claude"], "FAKE:question")
    expected = "question: Which database should the service use?"
    assert (False, expected) == (done.success, done.wait_reason)


def test_a_codex_turn_failed_at_exit_0_fails_the_run(store: Store, tmp_path: Path) -> None:
    """A stream whose turn failed is a failure even when the agent exits 0."""
    script = tmp_path / "codex-failing"
    events = [
        {"type": "thread.started", "thread_id": "th-1"},
        {"type": "turn.started"},
        {"type": "turn.failed", "error": {"message": "stream disconnected before completion"}},
    ]
    lines = "\n".join(json.dumps(e) for e in events)
    script.write_text(f"#!/bin/sh\ncat > /dev/null\ncat <<'EOF'\n{lines}\nEOF\nexit 0\n")
    script.chmod(0o700)
    profile = replace(BUILT_IN["codex"], command=(str(script),), permissions=())
    done, _ = run_agent(store, tmp_path, profile, "port it")
    assert (False, 0, None) == (done.success, done.exit_code, done.wait_reason)
    assert "the agent failed: error: stream disconnected before completion" == done.error


def test_codex_edits_in_its_sandbox_commits_nothing_and_counts_cache_once(
    store: Store, tmp_path: Path
) -> None:
    """The built-in codex (workspace-write): the edit is left uncommitted, the run
    succeeds, and its usage's input_tokens are the uncached 600 of 2,400."""
    done, repo = run_agent(store, tmp_path, BUILT_IN["codex"], "port it and commit")
    usage = {"input_tokens": 600, "cache_read_tokens": 1800, "output_tokens": 310}
    assert (True, usage, 1) == (done.success, done.usage, commits(repo))
    assert 1 == len(status(repo))


def test_codex_in_its_default_read_only_sandbox_changes_nothing(
    store: Store, tmp_path: Path
) -> None:
    """Without a sandbox flag (a user profile with no permissions) codex writes nothing."""
    profile = replace(BUILT_IN["codex"], permissions=())
    done, repo = run_agent(store, tmp_path, profile, "port it")
    assert (True, []) == (done.success, status(repo))


def test_aider_commits_its_edit_and_leaves_its_gitignore_edit(store: Store, tmp_path: Path) -> None:
    """aider auto-commits the edit; `.gitignore` gains `.aider*`, uncommitted."""
    done, repo = run_agent(store, tmp_path, BUILT_IN["aider"], "rename it")
    assert (True, 2, ["?? .gitignore"]) == (done.success, commits(repo), status(repo))
    assert ".aider*\n" == (repo / ".gitignore").read_text()


@pytest.mark.parametrize("agent", ["claude", "codex", "aider"])
def test_nochange_changes_nothing(store: Store, tmp_path: Path, agent: str) -> None:
    """FAKE:nochange: exit 0, no edit, no commit (aider's .gitignore edit aside)."""
    done, repo = run_agent(store, tmp_path, BUILT_IN[agent], "look FAKE:nochange")
    changed = [line for line in status(repo) if line != "?? .gitignore"]
    assert (True, [], 1) == (done.success, changed, commits(repo))


def limit_watch(store: Store, tmp_path: Path, clock: FakeClock, reset_at: datetime) -> StreamWatch:
    """A claude run's watch whose transcript holds a rejected limit resetting at `reset_at`,
    on a worker registered with the `claude` account (the one its park parks)."""
    transcript = tmp_path / "limit.jsonl"
    info = {
        "status": "rejected",
        "resetsAt": int(reset_at.timestamp()),
        "rateLimitType": "five_hour",
    }
    transcript.write_text(json.dumps({"type": "rate_limit_event", "rate_limit_info": info}) + "\n")
    agent = AgentSetup(profile=BUILT_IN["claude"], provider="claude", park_min_s=60.0)
    task = enqueue(store, NewTask(title="limited"))
    spec = NewWorker(name="limited", hostname="h", pid=None, provider="claude")
    worker = register(store, spec, settings=Settings()).worker
    runner = place(store, clock)._replace(worker_id=worker.id)
    return StreamWatch(
        runner, agent, run_id="r-1", task_id=task.id, transcript_path=str(transcript)
    )


@pytest.mark.parametrize(
    ("reset_in_s", "parked_s"),
    [(-5, 60), (0, 60), (30, 60), (59, 60), (61, 61), (3600, 3600)],
)
def test_a_limit_parks_at_least_the_minimum_past_its_reset(
    store: Store, tmp_path: Path, reset_in_s: int, parked_s: int
) -> None:
    """A limit that resets now, or has just reset (the agent still refuses past its
    resetsAt), parks the provider [agents] park_min (60 s) from now, not until an instant
    already past: no claim/refuse/defer spin. A later reset stands as given."""
    clock = FakeClock(NOW)
    watch = limit_watch(store, tmp_path, clock, NOW + timedelta(seconds=reset_in_s))
    verdict = watch.finish(exit_code=1, stderr_tail="", ending="exited")
    assert NOW + timedelta(seconds=parked_s) == verdict.limit_until
    (parked,) = store.events.list_events(EventFilter(names=("provider.parked",)))
    assert verdict.limit_until == datetime.fromisoformat(parked.data["until"])
