"""Agent profiles end to end: real orchestrators, workers and fake agent CLIs that speak
the real tools' documented formats (tests/agents/fakes, each saying where its shapes come
from), on both stores.

The fakes stand in for `claude`, `codex` and `aider` on PATH, so the workers run the
built-in profiles' real command lines; each invocation is logged to FAKE_AGENT_LOG with its
argv, folder and prompt.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from corral import NewTask, TaskStatus, enqueue, load_settings
from corral.model.events import EventFilter

FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"


@pytest.fixture(params=["sqlite", "postgresql"])
def any_pool(request: pytest.FixtureRequest) -> Any:
    """The orchestrator harness (runtime/conftest.py) on each store, the fakes on PATH."""
    pool = request.getfixturevalue("pool" if request.param == "sqlite" else "pg_pool")
    return _with_fakes(pool)


@pytest.fixture
def sqlite_pool(pool: Any) -> Any:
    """The harness on SQLite, the fakes on PATH."""
    return _with_fakes(pool)


def _with_fakes(pool: Any) -> Any:
    pool.env["PATH"] = f"{FAKES}:{pool.env['PATH']}"
    pool.env["FAKE_AGENT_LOG"] = str(pool.folder / "agents.jsonl")
    pool.env["FAKE_LIMIT_UNTIL"] = str(pool.folder / "limit-until")
    pool.env["CORRAL_AGENTS_PARK_MIN_S"] = "0"  # parks as short as the resets here
    return pool


def invocations(pool: Any) -> list[dict[str, Any]]:
    """Every fake agent invocation so far, in order."""
    path = pool.folder / "agents.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def add(pool: Any, title: str, **fields: Any) -> str:
    """Enqueue one task with the pool's settings; its id."""
    settings = load_settings(pool.env)
    return enqueue(pool.store, NewTask(title=title, **fields), settings=settings).id


def runs_of(pool: Any, task_id: str) -> list[dict[str, Any]]:
    """The task's runs as `corral runs --task ID --json` prints them, oldest first."""
    done = pool.corral("runs", "--task", task_id, "--json")
    assert 0 == done.returncode, done.stderr
    return list(reversed(json.loads(done.stdout)))


def finished(pool: Any, *task_ids: str) -> bool:
    return all(pool.store.tasks.get_task(t).status is TaskStatus.DONE for t in task_ids)


def spawn(pool: Any, *args: str) -> subprocess.Popen[bytes]:
    """Another corral process on the pool's store (killed with the pool's if left)."""
    with open(pool.folder / "spawned.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "corral.cli.main", *args],
            stdout=log,
            stderr=log,
            env=pool.environment(),
            cwd=pool.folder,
            start_new_session=True,
        )
    pool.started.append(proc)
    return proc


def stop(pool: Any) -> None:
    assert 0 == pool.corral("orchestrator", "stop", "--graceful").returncode


def test_a_claude_run_records_usage_cost_session_and_its_stop_reason(any_pool: Any) -> None:
    """One task through `--agent claude`: the run's usage, cost and session come from the
    stream; `show` totals them; the prompt went in on stdin, the title never an option."""
    pool = any_pool
    task = add(pool, "--dangerously-skip-permissions is a title, not a flag")
    pool.start("--workers", "1", "--agent", "claude", workers=None)
    pool.wait(lambda: finished(pool, task), 60)
    stop(pool)
    (run,) = runs_of(pool, task)
    (called,) = invocations(pool)
    assert ("claude", called["session_id"], None, "success") == (
        run["agent"],
        run["session_id"],
        run["resumed_from"],
        run["stop_reason"],
    )
    assert {
        "input_tokens": 12,
        "output_tokens": 34,
        "cache_read_tokens": 7800,
        "cache_write_tokens": 560,
        "cost_usd": 0.0421,
    } == run["usage"]
    expected = ["-p", "--output-format", "stream-json", "--verbose"]
    assert [*expected, "--permission-mode", "acceptEdits"] == called["argv"]
    assert "--dangerously-skip-permissions is a title" in called["prompt"]
    shown = json.loads(pool.corral("show", task, "--json").stdout)["totals"]
    assert (1, 1, 0.0421) == (shown["runs"], shown["with_usage"], shown["cost_usd"])


def test_a_killed_run_is_resumed_in_its_session_and_costs_total_over_three_runs(
    sqlite_pool: Any,
) -> None:
    """A usage limit (deferred, no attempt), then a run resuming that session killed with
    SIGKILL mid-stream (no usage: null), then a run resuming again with `--resume ID` and
    a short prompt, to success: three runs, the totals their sum, attempts 2."""
    pool = sqlite_pool
    (pool.folder / "limit-until").write_text("+4")  # 4 s from the first run
    # The second run holds until it is killed (however late a loaded machine sees it);
    # the directive is lifted before the kill, so the third run does not hold.
    hold = pool.folder / "directives"
    hold.write_text("FAKE:sleep=60")
    pool.env["FAKE_DIRECTIVES"] = str(hold)
    task = add(pool, "fix it FAKE:limit", max_attempts=3)
    pool.start("--workers", "1", "--agent", "claude", workers=None)
    # The second run, its agent started (it logged its call): a resumed run records its
    # session before the agent runs, so the run alone does not say the agent is there yet.
    pool.wait(lambda: len(runs_of(pool, task)) == 2 and len(invocations(pool)) == 2, 30)
    (agent,) = [p for p in pool.processes() if str(FAKES / "claude") in " ".join(p.cmdline())]
    hold.write_text("")
    agent.kill()
    pool.wait(lambda: finished(pool, task), 30)
    stop(pool)
    calls, runs = invocations(pool), runs_of(pool, task)
    assert ["usage_limit", "exited with status -9", "success"] == [r["stop_reason"] for r in runs]
    assert runs[1]["usage"] is None  # killed before its result: null, not zeros
    assert [None, runs[0]["id"], runs[1]["id"]] == [r["resumed_from"] for r in runs]
    session = runs[0]["session_id"]
    assert [session] * 3 == [r["session_id"] for r in runs]
    permissions = ["--permission-mode", "acceptEdits"]
    assert [
        permissions,
        ["--resume", session, *permissions],
        ["--resume", session, *permissions],
    ] == [c["argv"][4:] for c in calls]
    assert all("You were interrupted" in c["prompt"] for c in calls[1:])
    totals = json.loads(pool.corral("show", task, "--json").stdout)
    assert (3, 2, 0.0421, 2) == (
        totals["totals"]["runs"],
        totals["totals"]["with_usage"],
        totals["totals"]["cost_usd"],
        totals["attempts"],
    )


def test_four_workers_at_a_limit_park_the_fleet_until_the_reset(any_pool: Any) -> None:
    """4 workers of one profile, and a second runner standing for another host: the limit
    parks the provider; no claim is made by any of them until the reset; then every task
    completes once, attempts unchanged by the parking."""
    pool = any_pool
    (pool.folder / "limit-until").write_text("+5")  # 5 s from the first run
    tasks = [add(pool, f"task {n} FAKE:limit FAKE:sleep=0.2") for n in range(8)]
    pool.start("--workers", "4", "--agent", "claude", workers=None)
    other_host = spawn(pool, "worker", "start", "--name", "other-host", "--agent", "claude")
    pool.wait(lambda: finished(pool, *tasks), 60)
    stop(pool)
    other_host.terminate()
    other_host.wait(timeout=30)
    events = pool.store.events.list_events(EventFilter(limit=100_000))
    parked = [e for e in events if e.name == "provider.parked"]
    assert parked, "the limit parked the provider"
    reset = int((pool.folder / "limit-until.at").read_text())
    until = parked[0].data["until"]
    claims_while_parked = [
        e
        for e in events
        if e.name == "task.claimed" and parked[0].at < e.at and e.at.timestamp() < reset
    ]
    assert [] == claims_while_parked
    assert str(reset) == str(
        int(pool.store.providers.provider_states("claude")[0].parked_until.timestamp())
    )
    assert until.startswith(time.strftime("%Y-%m-%dT", time.gmtime(reset)))
    for task in tasks:
        record = pool.store.tasks.get_task(task)
        completed = [e for e in events if e.name == "task.completed" and e.task_id == task]
        assert (1, 1) == (record.attempts, len(completed)), task


def test_a_codex_limit_defers_and_the_next_run_resumes_its_thread(sqlite_pool: Any) -> None:
    """codex at its usage limit: the thread id is recorded, the task deferred until the
    reset its error carried, the provider parked; the next run is `codex exec resume
    --json THREAD -`, and its usage is the turns' sum."""
    pool = sqlite_pool
    (pool.folder / "limit-until").write_text("+4")  # 4 s from the first run
    task = add(pool, "port it FAKE:limit")
    pool.start("--workers", "1", "--agent", "codex", workers=None)
    pool.wait(lambda: finished(pool, task), 30)
    stop(pool)
    first, second = runs_of(pool, task)
    assert ("deferred", "usage_limit") == (first["outcome"], first["stop_reason"])
    assert first["session_id"] and first["session_id"] == second["session_id"]
    calls = invocations(pool)
    sandbox = ["--sandbox", "workspace-write"]
    assert ["exec", "--json", "-", *sandbox] == calls[0]["argv"]
    assert ["exec", "resume", "--json", first["session_id"], "-", *sandbox] == calls[1]["argv"]
    assert {"input_tokens": 600, "cache_read_tokens": 1800, "output_tokens": 310} == (
        second["usage"]
    )
    assert 1 == pool.store.tasks.get_task(task).attempts
    parked = pool.store.events.list_events(EventFilter(names=("provider.parked",)))
    assert ["codex"] == [e.data["provider"] for e in parked]


def test_a_question_flags_the_run_waiting_and_notifies_once(sqlite_pool: Any) -> None:
    """An agent that asks a person a question: the run is `waiting` (status, runs, event
    run.waiting), and `[notify] command` gets that event, once, as JSON on stdin: the
    task.waiting that follows when the run ends on its question is not a second notice."""
    pool = sqlite_pool
    notices = pool.folder / "notices.jsonl"
    script = pool.folder / "notify.sh"
    script.write_text(f'#!/bin/sh\n{{ printf "%s " "$CORRAL_NOTICE"; cat; }} >> "{notices}"\n')
    script.chmod(0o700)
    (pool.folder / ".corral" / "config.toml").write_text(f'[notify]\ncommand = "{script}"\n')
    # Then the fake gives up waiting and exits: long enough that the run still waits when
    # read below on a loaded machine (3 s was not, in a CI run), short for the test.
    pool.env["FAKE_SLEEP"] = "8"
    task = add(pool, "choose FAKE:question")
    pool.start("--workers", "1", "--agent", "claude", workers=None)
    pool.wait(lambda: notices.exists() and notices.read_text().strip(), 30)
    status = json.loads(pool.corral("status", "--json").stdout)
    (waiting,) = status["waiting"]
    assert (task, "question: Which database should the service use?") == (
        waiting["task_id"],
        waiting["reason"],
    )
    (run,) = runs_of(pool, task)
    assert run["waiting"] == waiting["reason"]
    kind, _, body = notices.read_text().strip().partition(" ")
    event = json.loads(body)
    assert ("run.waiting", "run.waiting", task) == (kind, event["name"], event["task_id"])
    assert "waiting" in pool.corral("runs", "--task", task).stdout
    pool.wait(lambda: pool.store.tasks.get_task(task).status == TaskStatus.WAITING, 30)
    failing = add(pool, "break FAKE:crash", max_attempts=1)  # its notice comes after
    pool.wait(lambda: len(notices.read_text().strip().splitlines()) >= 2, 30)
    stop(pool)
    lines = notices.read_text().strip().splitlines()
    assert [("run.waiting", task), ("task.failed", failing)] == [
        (line.partition(" ")[0], json.loads(line.partition(" ")[2])["task_id"]) for line in lines
    ]


def test_a_worktree_made_again_starts_a_fresh_session(sqlite_pool: Any) -> None:
    """--worktree: a cancelled task's worktree is removed; after `retry` its next run is in
    a worktree made again at the same path, where its agent starts a fresh session (the
    folder that session was made in is gone), not a resumed one."""
    pool = sqlite_pool
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (("init", "-q", "-b", "main"), ("commit", "-q", "--allow-empty", "-m", "start")):
        subprocess.run(["git", *args], cwd=pool.folder, env=env, check=True)
    assert 0 == pool.corral("init").returncode
    pool.env["CORRAL_WORKTREE_ON_EMPTY"] = "done"  # the stand-in claude edits nothing
    hold = pool.folder / "directives"  # the first run holds until cancelled
    hold.write_text("FAKE:sleep=60")
    pool.env["FAKE_DIRECTIVES"] = str(hold)
    task = add(pool, "run twice")
    pool.start("--workers", "1", "--agent", "claude", "--worktree", workers=None)
    pool.wait(lambda: len(runs_of(pool, task)) == 1 and runs_of(pool, task)[0]["session_id"], 30)
    hold.write_text("")
    assert 0 == pool.corral("cancel", task).returncode
    pool.wait(
        lambda: (
            not any(p.is_dir() for p in (pool.folder / ".corral" / "worktrees").glob("corral-*"))
        ),
        30,
    )
    assert 0 == pool.corral("retry", task).returncode
    pool.wait(lambda: finished(pool, task), 30)
    stop(pool)
    first, second = invocations(pool)
    assert (first["cwd"], False) == (second["cwd"], second["resumed"])
    assert [None, None] == [r["resumed_from"] for r in runs_of(pool, task)]


def test_changes_requested_resume_the_session_in_the_same_worktree(sqlite_pool: Any) -> None:
    """--worktree: a task in review sent back with a note resumes its agent's session in the
    worktree it ran in, told the reviewer's note; a killed run keeps its worktree for the
    next run to resume in."""
    pool = sqlite_pool
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (("init", "-q", "-b", "main"), ("commit", "-q", "--allow-empty", "-m", "start")):
        subprocess.run(["git", *args], cwd=pool.folder, env=env, check=True)
    assert 0 == pool.corral("init").returncode
    pool.env["CORRAL_WORKTREE_ON_EMPTY"] = "done"  # the stand-in claude edits nothing
    hold = pool.folder / "directives"  # the first run holds until killed; no other does
    hold.write_text("FAKE:sleep=60")
    pool.env["FAKE_DIRECTIVES"] = str(hold)
    task = add(pool, "review me", requires_review=True, max_attempts=3)
    pool.start("--workers", "1", "--agent", "claude", "--worktree", workers=None)
    pool.wait(lambda: len(runs_of(pool, task)) == 1 and runs_of(pool, task)[0]["session_id"], 30)
    (agent,) = [p for p in pool.processes() if str(FAKES / "claude") in " ".join(p.cmdline())]
    hold.write_text("")
    agent.kill()
    pool.wait(lambda: pool.store.tasks.get_task(task).status is TaskStatus.IN_REVIEW, 30)
    note = "Name the flag --dry-run, not --check."
    assert 0 == pool.corral("request-changes", task, "--note", note).returncode
    pool.wait(lambda: pool.store.tasks.get_task(task).status is TaskStatus.IN_REVIEW, 30)
    stop(pool)
    killed, resumed, changed = invocations(pool)
    runs = runs_of(pool, task)
    assert killed["cwd"] == resumed["cwd"] == changed["cwd"] != str(pool.folder)
    session = runs[0]["session_id"]
    assert [None, session, session] == [
        c["argv"][c["argv"].index("--resume") + 1] if c["resumed"] else None
        for c in (killed, resumed, changed)
    ]
    assert note in changed["prompt"] and "The reviewer asked for changes" in changed["prompt"]
    assert [None, runs[0]["id"], runs[1]["id"]] == [r["resumed_from"] for r in runs]


def test_a_provider_accounts_environment_reaches_its_agents_alone(sqlite_pool: Any) -> None:
    """`[providers."claude:work"]`: its cap is written into the store at start, its env
    reaches the agents (a `${VAR}` resolved from the orchestrator's environment, whose own
    secrets stay withheld), and nothing else of it leaks into the agent's environment."""
    pool = sqlite_pool
    (pool.folder / ".corral" / "config.toml").write_text(
        '[providers."claude:work"]\nmax_running = 1\n'
        'env = { CLAUDE_CONFIG_DIR = "/srv/claude-work", ANTHROPIC_API_KEY = "${WORK_API_KEY}" }\n'
    )
    pool.env["WORK_API_KEY"] = "sk-work-123"
    pool.env["FAKE_LOG_ENV"] = "ANTHROPIC_API_KEY,CLAUDE_CONFIG_DIR,WORK_API_KEY"
    pool.env["CORRAL_ENV_ALLOW"] = "FAKE_*"  # the stand-in's controls; WORK_API_KEY is not
    task = add(pool, "work task")
    pool.start("--workers", "2", "--agent", "claude", "--provider", "claude:work", workers=None)
    pool.wait(lambda: finished(pool, task), 30)
    listed = json.loads(pool.corral("provider", "list", "--json").stdout)
    stop(pool)
    (called,) = invocations(pool)
    agent_env = called["env"]
    assert ("sk-work-123", "/srv/claude-work") == (
        agent_env.get("ANTHROPIC_API_KEY"),
        agent_env.get("CLAUDE_CONFIG_DIR"),
    )
    assert "WORK_API_KEY" not in agent_env and "CORRAL_PROVIDER_ENV" not in agent_env
    assert [("claude:work", 1, 2)] == [(p["name"], p["max_running"], p["workers"]) for p in listed]


QUOTA_AGENT = """#!/bin/sh
# An agent of a profile of the user's own, that dies of its provider's quota the old way:
# no stream event, a line on stderr and exit status 1 (the profile's limit_patterns).
cat > /dev/null
echo "{\\"session\\": \\"$$\\"}"
if [ -f "$QUOTA_ARMED" ]; then  # spent until two seconds from now, which it notes down
  rm "$QUOTA_ARMED"
  until=$(( $(date +%s) + 2 ))
  echo "$until" > "$QUOTA_UNTIL"
  echo "error: quota exceeded until $until" >&2
  exit 1
fi
if [ -f "$QUOTA_VAGUE" ]; then rm "$QUOTA_VAGUE"; echo "error: quota exceeded" >&2; exit 1; fi
echo '{"usage": {"input_tokens": 5, "output_tokens": 1}}'
"""


def _quota_profile(pool: Any) -> None:
    script = pool.folder / "quota-agent"
    script.write_text(QUOTA_AGENT)
    script.chmod(0o700)
    agents = pool.folder / ".corral" / "agents"
    agents.mkdir()
    (agents / "quota.toml").write_text(
        f'command = ["{script}"]\noutput = "generic"\nprovider = "acme"\n'
        'limit_patterns = ["quota exceeded until (?P<reset>\\\\d+)", "quota exceeded"]\n'
    )
    pool.env["QUOTA_ARMED"] = str(pool.folder / "quota-armed")
    pool.env["QUOTA_UNTIL"] = str(pool.folder / "quota-until")
    pool.env["QUOTA_VAGUE"] = str(pool.folder / "quota-vague")


def test_a_limit_signature_at_exit_parks_until_its_reset_or_for_the_default(
    sqlite_pool: Any,
) -> None:
    """A profile's limit_patterns: an exit whose stderr says the quota is spent until T
    defers the task until T and parks its provider; one that gives no time parks for
    `[agents] park_default`, and the park's reason says so. No attempt counted."""
    pool = sqlite_pool
    _quota_profile(pool)
    pool.env["CORRAL_AGENTS_PARK_S"] = "1"  # [agents] park_default
    (pool.folder / "quota-armed").write_text("")  # the reset time: when the agent ran
    task = add(pool, "use the quota")
    pool.start("--workers", "1", "--agent", "quota", workers=None)
    pool.wait(lambda: finished(pool, task), 30)
    reset = int((pool.folder / "quota-until").read_text())
    (pool.folder / "quota-vague").write_text("")
    vague = add(pool, "use it again")
    pool.wait(lambda: finished(pool, vague), 30)
    stop(pool)
    limited, done = runs_of(pool, task)
    assert ("deferred", "usage_limit", "success") == (
        limited["outcome"],
        limited["stop_reason"],
        done["stop_reason"],
    )
    parks = pool.store.events.list_events(EventFilter(names=("provider.parked",)))
    assert ["acme", "acme"] == [e.data["provider"] for e in parks]
    assert time.strftime("%H:%M:%S", time.gmtime(reset)) in parks[0].data["until"]
    assert "no reset time given" in (parks[1].reason or "")
    assert [1, 1] == [pool.store.tasks.get_task(t).attempts for t in (task, vague)]


@pytest.mark.parametrize("off", ["config", "payload"])
def test_resume_can_be_turned_off(sqlite_pool: Any, off: str) -> None:
    """`[agents] resume = false`, or a task whose payload says `"resume": false`: the run
    after a usage limit starts a fresh session with the whole prompt."""
    pool = sqlite_pool
    if off == "config":
        (pool.folder / ".corral" / "config.toml").write_text("[agents]\nresume = false\n")
    (pool.folder / "limit-until").write_text("+4")  # 4 s from the first run
    payload = {"resume": False} if off == "payload" else {}
    task = add(pool, "again FAKE:limit", payload=payload)
    pool.start("--workers", "1", "--agent", "claude", workers=None)
    pool.wait(lambda: finished(pool, task), 30)
    stop(pool)
    _, fresh = invocations(pool)
    first, second = runs_of(pool, task)
    assert ("--resume" not in fresh["argv"], None) == (True, second["resumed_from"])
    assert first["session_id"] != second["session_id"]
    assert "You are a worker agent" in fresh["prompt"]
