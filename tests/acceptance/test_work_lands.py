"""Issue 27's parts together, as a user meets them: real runners and orchestrators running
the stand-in agents (tests/agents/fakes) through the built-in profiles in real git
worktrees. A refused run waits and, answered, lands; a question's answer reaches the
resumed session; an empty run waits and runs again where it was; codex's and aider's work
lands as their tools leave it; a usage limit mid-edit parks the provider and the edit
survives the orchestrator's upkeep to land."""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from tests.agents.recorded import assert_resumed
from tests.conftest import CORRAL
from tests.git.conftest import GIT_ENV, git
from tests.runtime.conftest import Pool, wait_until

FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"


def init_repo(folder: Path) -> None:
    """A repository on main with one commit in `folder`."""
    git(folder, "init", "--quiet", "-b", "main")
    (folder / "README").write_text("hello\n")
    git(folder, "add", "README")
    git(folder, "commit", "--quiet", "-m", "initial")


@dataclass
class Project:
    """A repository with its store in `.corral/`; corral run there, the stand-ins on PATH."""

    folder: Path

    @property
    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        return (
            env
            | GIT_ENV
            | {
                "CORRAL_DB": str(self.folder / ".corral" / "corral.db"),
                "PATH": f"{FAKES}:{os.environ['PATH']}",
                "FAKE_AGENT_LOG": str(self.folder / "agents.jsonl"),
                "FAKE_SLEEP": "0.5",  # a question's stand-in gives up waiting soon
                "CORRAL_ENV_ALLOW": "FAKE_*",  # the stand-in agents' controls reach them
            }
        )

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CORRAL, *args],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    def json(self, *args: str) -> Any:
        done = self(*args, "--json")
        assert 0 == done.returncode, done.stderr
        return json.loads(done.stdout)

    def add(self, title: str, description: str = "") -> str:
        done = self("add", title, "--desc", description)
        assert 0 == done.returncode, done.stderr
        return done.stdout.strip()

    def work(self, agent: str, *args: str) -> subprocess.CompletedProcess[str]:
        """One task run by `worker start --once --worktree --agent AGENT`."""
        return self(
            *("worker", "start", "--name", agent, "--agent", agent, "--once", "--worktree", *args)
        )

    def calls(self) -> list[dict[str, Any]]:
        """Every stand-in invocation so far, oldest first."""
        log = self.folder / "agents.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    def branch(self, task: str) -> dict[str, Any]:
        [state] = [b for b in self.json("branches") if b["task_id"] == task]
        return dict(state)


@pytest.fixture
def project(tmp_path: Path) -> Project:
    """An initialised repository and store."""
    init_repo(tmp_path)
    (tmp_path / ".corral").mkdir()
    made = Project(tmp_path)
    assert 0 == made("init").returncode
    return made


def assert_landed(project: Project, task: str) -> str:
    """The task is done and landed on main at the commit `branches --json` reports; it."""
    shown = project.json("show", task)
    state = project.branch(task)
    main = git(project.folder, "rev-parse", "main")
    assert ("done", "landed", "landed") == (
        shown["status"],
        shown["work"]["outcome"],
        state["where"],
    )
    assert state["sha"] == shown["work"]["merged_commit"]
    git(project.folder, "merge-base", "--is-ancestor", state["sha"], main)
    return str(state["sha"])


def test_a_refused_claude_run_waits_and_once_allowed_lands_from_its_worktree(project: Project):
    """claude in the default permission mode edits nothing: the task waits `refused: Write`
    with its worktree kept; answered and given acceptEdits, the next run resumes the session
    in the same path, edits, corral commits and it lands at the SHA branches reports."""
    task = project.add("Write the docs")
    refused = project.work("claude", "--agent-arg", "--permission-mode", "--agent-arg", "default")
    assert (1, True) == (refused.returncode, "outcome=waiting" in refused.stderr)
    shown = project.json("show", task)
    assert ("waiting", "refused: Write") == (shown["status"], shown["wait_reason"])
    [first] = project.calls()
    assert Path(first["cwd"]).is_dir()
    assert 0 == project("answer", task, "you may write now").returncode
    assert "ready" == project.json("show", task)["status"]
    ran = project.work("claude")
    assert 0 == ran.returncode, ran.stderr
    _, second = project.calls()
    assert_resumed(first, second)
    assert "you may write now" in second["prompt"]
    sha = assert_landed(project, task)
    assert sha == git(project.folder, "rev-parse", "main")
    assert git(project.folder, "show", f"main:fake-edit-{task}.txt").startswith("claude ")


def test_a_question_waits_and_its_answer_reaches_the_resumed_session(project: Project):
    """FAKE:question: the task waits `question: ...`; `corral answer` makes it ready and the
    next run resumes the same session in the same folder, the answer in its prompt."""
    task = project.add("Pick a database", "FAKE:question")
    project.work("claude")
    shown = project.json("show", task)
    assert ("waiting", "question: Which database should the service use?") == (
        shown["status"],
        shown["wait_reason"],
    )
    assert 0 == project("answer", task, "PostgreSQL, the production store").returncode
    assert 0 == project.work("claude").returncode
    asked, answered = project.calls()
    assert_resumed(asked, answered)
    assert "PostgreSQL, the production store" in answered["prompt"]
    assert_landed(project, task)


def test_a_run_that_changes_nothing_waits_and_retry_runs_in_the_same_worktree(project: Project):
    """FAKE:nochange: the task waits `no_change: ...` (outcome no_change); `retry` makes it
    ready and the next run is in the same worktree, resuming the session, and lands."""
    task = project.add("Tidy up", "FAKE:nochange")
    project.work("claude")
    shown = project.json("show", task)
    assert ("waiting", "no_change: the run changed nothing", "no_change") == (
        shown["status"],
        shown["wait_reason"],
        shown["work"]["outcome"],
    )
    assert 0 == project("retry", task).returncode
    assert 0 == project.work("claude").returncode
    idle, again = project.calls()
    assert (idle["cwd"], idle["session_id"]) == (again["cwd"], again["session_id"])
    assert_landed(project, task)


def test_codex_and_aider_work_lands_with_aiders_gitignore_edit_committed(project: Project):
    """codex never commits, aider commits its edit and leaves `.gitignore` edited: both land
    (branches says landed, not abandoned, no backup ref), and corral committed the
    `.gitignore` edit on main."""
    codex = project.add("Port the parser")
    assert 0 == project.work("codex").returncode
    aider = project.add("Rename the flag")
    assert 0 == project.work("aider").returncode
    for task in (codex, aider):
        assert_landed(project, task)
        assert [] == project.branch(task)["backup_refs"]
        assert git(project.folder, "show", f"main:fake-edit-{task}.txt")
    assert ".aider*" in git(project.folder, "show", "main:.gitignore")
    assert "" == git(project.folder, "status", "--porcelain", "--untracked-files=no")


def test_a_usage_limit_mid_edit_parks_and_the_edit_survives_upkeep_to_land(tmp_path: Path):
    """FAKE:limit under an orchestrator: claude edits, then hits its limit; the provider
    parks; the worktree keeps the uncommitted edit through the orchestrator's upkeep passes;
    after the reset the run resumes the same session in the same path and both edits land."""
    init_repo(tmp_path)
    pool = Pool(tmp_path)
    try:
        pool.env |= GIT_ENV | {
            "PATH": f"{FAKES}:{pool.env['PATH']}",
            "FAKE_AGENT_LOG": str(tmp_path / "agents.jsonl"),
            "FAKE_LIMIT_UNTIL": str(tmp_path / "limit-until"),
            "CORRAL_AGENTS_PARK_MIN_S": "0",
        }
        assert 0 == pool.corral("init").returncode
        (tmp_path / "limit-until").write_text("+6")  # 6 s from the first run
        task = json.loads(pool.corral("add", "Port it", "--desc", "FAKE:limit", "--json").stdout)
        task_id = task["id"]
        pool.start("--workers", "1", "--agent", "claude", "--worktree", workers=None)
        calls = tmp_path / "agents.jsonl"
        pool.wait(
            lambda: any(s.parked_until for s in pool.store.providers.provider_states("claude")), 30
        )
        [limited] = [json.loads(line) for line in calls.read_text().splitlines()]
        edit = Path(limited["cwd"], f"fake-edit-{task_id}.txt")
        parked_at = datetime.now(UTC)

        def upkept_twice() -> bool:
            last = pool.store.orchestrators.get_orchestrator().last_reconcile_at
            return last is not None and (last - parked_at).total_seconds() > 1

        pool.wait(upkept_twice, 30)
        assert "ready" == pool.store.tasks.get_task(task_id).status.value
        assert edit.read_text().startswith("claude ")
        pool.wait(lambda: pool.store.tasks.get_task(task_id).status.value == "done", 30)
        assert 0 == pool.corral("orchestrator", "stop", "--graceful").returncode
        _, resumed = [json.loads(line) for line in calls.read_text().splitlines()]
        assert_resumed(limited, resumed)
        landed = git(tmp_path, "show", f"main:fake-edit-{task_id}.txt").splitlines()
        assert 2 == len(landed)
        state = json.loads(pool.corral("branches", "--json").stdout)
        assert [("landed", git(tmp_path, "rev-parse", "main"))] == [
            (b["where"], b["sha"]) for b in state
        ]
    finally:
        pool.close()


def test_aider_in_a_worktree_on_a_server_store_finds_its_prompt_file(tmp_path: Path, pg_url):
    """On a store that is no file (PostgreSQL here, HTTP alike) the runs folder is `.corral`
    in the runner's folder: the prompt file handed to aider, which runs in the worktree,
    is named by an absolute path, so aider reads it and the task lands."""
    init_repo(tmp_path)
    project = Project(tmp_path)
    env = project.env | {"CORRAL_DB": pg_url}
    add = [CORRAL, "add", "Rename the flag", "--db", pg_url]
    subprocess.run([CORRAL, "init", "--db", pg_url], env=env, check=True, capture_output=True)
    task = subprocess.run(add, env=env, check=True, capture_output=True, text=True).stdout.strip()
    ran = subprocess.run(
        [CORRAL, "worker", "start", "--name", "w", "--agent", "aider", "--once", "--worktree"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert 0 == ran.returncode, ran.stderr
    [call] = project.calls()
    prompt_file = call["argv"][call["argv"].index("--message-file") + 1]
    assert os.path.isabs(prompt_file)
    assert git(tmp_path, "show", f"main:fake-edit-{task}.txt").startswith("aider ")


def test_a_runner_killed_mid_task_is_resumed_in_its_worktree_by_its_restart(project: Project):
    """SIGKILL of the runner while its claude works: the same runner started again (same
    name, same host) takes the task back at once, resumes the session in the same
    worktree, and the killed run's edit (its agent finished it) lands with the new one."""
    task = project.add("Long one", "FAKE:sleep=2")
    runner = subprocess.Popen(
        [CORRAL, "worker", "start", "--name", "w", "--agent", "claude", "--once", "--worktree"],
        cwd=project.folder,
        env=project.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        # Once the runner has read the session from the agent's stream (resumable).
        wait_until(lambda: any(r["session_id"] for r in project.json("runs", "--task", task)), 30)
        runner.kill()
    finally:
        runner.wait(timeout=30)
    [first] = project.calls()
    edit = Path(first["cwd"], f"fake-edit-{task}.txt")
    wait_until(edit.exists, 30)  # the orphaned agent finishes its edit
    ran = project(*("worker", "start", "--name", "w", "--agent", "claude", "--once", "--worktree"))
    assert 0 == ran.returncode, ran.stderr
    _, second = project.calls()
    assert_resumed(first, second)
    assert_landed(project, task)
    landed = git(project.folder, "show", f"main:fake-edit-{task}.txt").splitlines()
    assert [first["env"]["CORRAL_RUN_ID"], second["env"]["CORRAL_RUN_ID"]] == [
        line.split()[1].rstrip(":") for line in landed
    ]
