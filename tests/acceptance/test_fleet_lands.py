"""Issue 27's acceptance run: 30 tasks on two hosts sharing one bare remote as the base of
record (`[worktree] remote = origin`) and one PostgreSQL store. Host A runs an
orchestrator of claude workers and a codex and an aider worker on the store directly; host
B runs claude and codex workers through a real `corral serve`. The stand-in agents never
commit (codex), commit only when asked (claude), auto-commit (aider); one is refused, one
changes nothing, one reaches a usage limit mid-edit, one is killed with SIGKILL, two edit
the same line. Every task ends as its stand-in dictates, every landed change is on the
remote's main at its recorded commit, both hosts' `branches` agree, and no line an agent
wrote is lost."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest
from tests.agents.recorded import assert_resumed
from tests.git.conftest import GIT_ENV, git
from tests.runtime.conftest import POOL_ENV, wait_until
from tests.server.conftest import Server

from corral import open_store

FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"
CORRAL = [sys.executable, "-m", "corral.cli.main"]
# claude may run git (`Bash(git:*)`): it commits when a prompt asks it to.
CLAUDE_ARGS = ("--agent-arg", "--allowedTools", "--agent-arg", "Bash(git:*)")


@dataclass(frozen=True)
class Job:
    """One task of the run: what it asks its stand-in, and how it must end."""

    title: str
    kind: str  # the agent that runs it: claude, codex or aider
    description: str = ""
    expected: str = "landed"  # landed, in_review, kept, no_change or refused
    review: bool = False
    priority: int = 0
    max_attempts: int = 3


def jobs() -> list[Job]:
    """The 30 tasks."""
    made = [Job(f"codex change {n}", "codex") for n in range(7)]
    made += [Job(f"aider change {n}", "aider") for n in range(8)]
    made += [Job(f"claude change {n}", "claude") for n in range(4)]
    made += [Job(f"claude change {n}, commit it", "claude") for n in range(3, 7)]
    made += [
        Job("claude reviewed change", "claude", review=True, expected="in_review"),
        Job("hook it", "claude", "FAKE:edit=.git/hooks/pre-commit", expected="refused"),
        Job("nothing to do", "claude", "FAKE:nochange", expected="no_change"),
        # Each runs again at the site (host and clone) where its worktree and session are,
        # whichever host's claude worker ran it first.
        Job("port at the limit", "claude", "FAKE:limit", priority=9),  # before the reset
        Job("killed midway", "claude", "FAKE:sleep=30", priority=5),
        # Two tasks appending to shared.txt from the same base: the second to land conflicts
        # on every run (the stand-ins never merge) and ends kept, its branch named.
        Job("conflict one", "codex", "FAKE:edit=shared.txt FAKE:sleep=2", "x", priority=9),
        Job("conflict two", "codex", "FAKE:edit=shared.txt FAKE:sleep=2", "x", priority=9),
    ]
    return made


@dataclass
class Fleet:
    """The remote, the two hosts' clones and environments, the store and its server."""

    folder: Path
    bare: Path
    host_a: Path
    host_b: Path
    served: Server
    env_a: dict[str, str]
    env_b: dict[str, str]
    operator_token: str
    procs: list[subprocess.Popen[bytes]]

    def corral(self, env: dict[str, str], cwd: Path, *args: str) -> Any:
        done = subprocess.run(
            [*CORRAL, *args],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert 0 == done.returncode, done.stderr
        return json.loads(done.stdout) if "--json" in args else done.stdout.strip()

    def spawn(self, name: str, env: dict[str, str], cwd: Path, *args: str) -> None:
        with open(self.folder / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(
                [*CORRAL, *args],
                env=env,
                cwd=cwd,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.procs.append(proc)

    def calls(self) -> list[dict[str, Any]]:
        log = self.folder / "agents.jsonl"
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture
def fleet(tmp_path: Path, pg_url: str) -> Iterator[Fleet]:
    """A bare remote with two clones, a PostgreSQL store served on loopback; every process
    started is killed at the end."""
    bare = tmp_path / "origin.git"
    git(tmp_path, "init", "--quiet", "--bare", "-b", "main", str(bare))
    seed = tmp_path / "seed"
    git(tmp_path, "clone", "--quiet", str(bare), str(seed))
    git(seed, "checkout", "--quiet", "-b", "main")
    (seed / "README").write_text("hello\n")
    (seed / "shared.txt").write_text("one\ntwo\nthree\n")
    git(seed, "add", ".")
    git(seed, "commit", "--quiet", "-m", "initial")
    git(seed, "push", "--quiet", "origin", "main")
    hosts = []
    for name in ("a", "b"):
        git(tmp_path, "clone", "--quiet", str(bare), str(tmp_path / name))
        hosts.append(tmp_path / name)
    (tmp_path / "serve").mkdir()
    served = Server(tmp_path / "serve", db=pg_url)
    common = {
        **GIT_ENV,
        **POOL_ENV,
        "PATH": f"{FAKES}:{Path(sys.executable).parent}:{os.environ['PATH']}",
        "FAKE_AGENT_LOG": str(tmp_path / "agents.jsonl"),
        "FAKE_LIMIT_UNTIL": str(tmp_path / "limit-until"),
        "CORRAL_ENV_ALLOW": "FAKE_*",  # the stand-in agents' controls reach them
        "CORRAL_AGENTS_PARK_MIN_S": "0",
        "CORRAL_WORKTREE_REMOTE": "origin",
    }
    env_a = {**served.env, **common}
    worker_token = served.token("worker")
    operator_token = served.token("operator")
    served.start()
    env_b = {k: v for k, v in served.env.items() if not k.startswith("CORRAL_")}
    env_b |= common | {"CORRAL_DB": served.url, "CORRAL_TOKEN": worker_token}
    made = Fleet(tmp_path, bare, hosts[0], hosts[1], served, env_a, env_b, operator_token, [])
    try:
        yield made
    finally:
        for proc in made.procs:
            with contextlib.suppress(psutil.Error):
                for child in psutil.Process(proc.pid).children(recursive=True):
                    child.kill()
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        served.close()


def kill_agent_of(task_id: str) -> bool:
    """SIGKILL the stand-in running `task_id`, if one is; whether one was."""
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error):
            if proc.environ().get("CORRAL_TASK_ID") == task_id and str(FAKES) in " ".join(
                proc.cmdline()
            ):
                proc.kill()
                return True
    return False


@pytest.mark.slow
@pytest.mark.timeout(360)  # ~25 s alone; several times that on a loaded machine
def test_thirty_tasks_on_two_hosts_end_as_their_agents_dictate_and_lose_nothing(fleet: Fleet):
    """The acceptance run of issue 27 (see the module's docstring)."""
    ids: dict[str, Job] = {}
    for job in jobs():
        args = ["add", job.title, "--kind", job.kind, "--desc", job.description]
        args += ["--priority", str(job.priority), "--max-attempts", str(job.max_attempts)]
        task = fleet.corral(fleet.env_a, fleet.host_a, *args, *(["--review"] * job.review))
        ids[task] = job
    (fleet.folder / "limit-until").write_text("+6")  # 6 s from the first limited run
    start_hosts(fleet)
    killed = next(t for t, j in ids.items() if j.title == "killed midway")
    wait_until(lambda: any(c["env"].get("CORRAL_TASK_ID") == killed for c in fleet.calls()), 60)
    wait_until(lambda: kill_agent_of(killed), 10)
    store = open_store(fleet.env_a["CORRAL_DB"])
    try:
        ended = {"done", "in_review", "waiting", "failed"}
        wait_until(lambda: {store.tasks.get_task(t).status.value for t in ids} <= ended, 100, 0.5)
    finally:
        store.close()

    shown = {t: fleet.corral(fleet.env_a, fleet.host_a, "show", t, "--json") for t in ids}
    outcomes = {t: s["work"]["outcome"] for t, s in shown.items()}
    conflicting = sorted(str(outcomes[t]) for t, j in ids.items() if j.title.startswith("conflict"))
    assert ["kept", "landed"] == conflicting
    expected = {t: j.expected for t, j in ids.items() if not j.title.startswith("conflict")}
    assert expected == {t: outcomes[t] for t in expected}
    for title in ("port at the limit", "killed midway"):  # resumed where its session was
        [task] = [t for t, j in ids.items() if j.title == title]
        calls = [c for c in fleet.calls() if c["env"]["CORRAL_TASK_ID"] == task]
        assert 2 == len(calls), title
        assert_resumed(calls[0], calls[1])
    assert_branches_agree(fleet, shown)
    assert_no_line_lost(fleet, ids, shown)


def start_hosts(fleet: Fleet) -> None:
    """Host A: an orchestrator of two claude workers, a codex and an aider worker, on the
    store; host B: a claude and a codex worker through `corral serve`."""
    fleet.spawn(
        "orchestrator-a",
        fleet.env_a,
        fleet.host_a,
        *("orchestrator", "start", "--workers", "2", "--agent", "claude", "--kind", "claude"),
        *("--worktree", *CLAUDE_ARGS),
    )
    for host, env, agent, extra in (
        ("a", fleet.env_a, "codex", ()),
        ("a", fleet.env_a, "aider", ()),
        ("b", fleet.env_b, "claude", CLAUDE_ARGS),
        ("b", fleet.env_b, "codex", ()),
    ):
        name = f"{agent}-{host}"
        fleet.spawn(
            name,
            env,
            fleet.host_a if host == "a" else fleet.host_b,
            *("worker", "start", "--name", name, "--agent", agent, "--kind", agent),
            *("--worktree", *extra),
        )


def assert_branches_agree(fleet: Fleet, shown: dict[str, Any]) -> None:
    """`branches --json` on both hosts: the same place for every task's work, the same
    commit for every one that ended (a branch still at work is on its host alone); each
    landed one on the remote's main at the commit the task records."""
    remote_main = git(fleet.bare, "rev-parse", "main")
    on_a = fleet.corral(fleet.env_a, fleet.host_a, "branches", "--json")
    env_b = {**fleet.env_b, "CORRAL_TOKEN": fleet.operator_token}
    on_b = fleet.corral(env_b, fleet.host_b, "branches", "--json")

    def seen(states: list[dict[str, Any]]) -> dict[str, tuple[str, str | None]]:
        return {
            s["task_id"]: (s["where"], None if s["where"] == "working" else s["sha"])
            for s in states
        }

    assert seen(on_a) == seen(on_b)
    landed = {s["task_id"]: s["sha"] for s in on_a if s["where"] == "landed"}
    for task, sha in landed.items():
        assert shown[task]["work"]["merged_commit"] == sha
        git(fleet.bare, "merge-base", "--is-ancestor", sha, remote_main)
    events = fleet.corral(
        fleet.env_a, fleet.host_a, "events", "--type", "task.landed", "--limit", "100", "--json"
    )
    assert sorted(landed.items()) == sorted(
        (e["task_id"], e["data"]["merged_commit"]) for e in events
    )


def assert_no_line_lost(fleet: Fleet, ids: dict[str, Job], shown: dict[str, Any]) -> None:
    """Every line a stand-in wrote (it names its run) is on the remote's main, on a kept
    or reviewed branch on the remote, or on a backup ref named on its task."""
    holders = {t: ["origin/main", *s["work"]["backup_refs"]] for t, s in shown.items()}
    for t, s in shown.items():
        if s["work"]["outcome"] in ("kept", "in_review"):
            holders[t].append(f"origin/{s['branch']}")
    for clone in (fleet.host_a, fleet.host_b):
        git(clone, "fetch", "--quiet", "origin")
    for call in fleet.calls():
        task, run = call["env"]["CORRAL_TASK_ID"], call["env"]["CORRAL_RUN_ID"]
        job = ids[task]
        if job.expected in ("refused", "no_change") or "FAKE:sleep=30" in call["prompt"]:
            continue  # refused or changed nothing, or killed before its edit: wrote nothing
        # A resumed run's prompt lacks the description's FAKE:edit: it edits the default file.
        paths = ("shared.txt", f"fake-edit-{task}.txt")
        found = [
            (clone.name, ref)
            for clone in (fleet.host_a, fleet.host_b)
            for ref in holders[task]
            for path in paths
            if f" {run}: " in _show(clone, f"{ref}:{path}")
        ]
        assert found, (task, run, job.title, holders[task])


def _show(repo: Path, spec: str) -> str:
    """`git show SPEC` in `repo`: the file, or "" when the ref or path is not there."""
    done = subprocess.run(
        ["git", "show", spec], cwd=repo, capture_output=True, text=True, check=False
    )
    return done.stdout
