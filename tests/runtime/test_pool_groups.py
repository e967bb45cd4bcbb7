"""One pool, many agents: `[[pool.group]]` end to end, with real orchestrators, workers and
the fake agent CLIs that speak the real claude, codex and aider formats (tests/agents/fakes).
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

from corral import NewTask, TaskStatus, enqueue, load_settings

FAKES = Path(__file__).resolve().parents[1] / "agents" / "fakes"
FLEET = """
[[pool.group]]
agent = "claude"
workers = 3
kinds = ["code"]

[[pool.group]]
agent = "codex"
workers = 2
kinds = ["tests"]

[[pool.group]]
agent = "aider"
kinds = ["docs"]
"""
AGENT_OF_KIND = {"code": "claude", "tests": "codex", "docs": "aider"}


def _fleet(pool: Any) -> Path:
    """The issue's fleet.toml in the pool's folder, the fake agents on PATH."""
    pool.env["PATH"] = f"{FAKES}:{pool.env['PATH']}"
    pool.env["FAKE_AGENT_LOG"] = str(pool.folder / "agents.jsonl")
    path = pool.folder / "fleet.toml"
    path.write_text(FLEET)
    return path


def _slots(pool: Any) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in pool.store.orchestrators.get_orchestrator().slots}


def _invocations(pool: Any) -> list[dict[str, Any]]:
    path = pool.folder / "agents.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def test_a_mixed_pool_runs_each_kind_with_its_groups_agent_and_restarts_one_slot_alone(
    pool: Any,
) -> None:
    """claude x3 on code, codex x2 on tests, aider x1 on docs: 30 tasks each run by their
    group's agent in one of their group's slots; a slot killed is the only one restarted."""
    fleet = _fleet(pool)
    pool.start("--config", str(fleet), workers=None)
    pool.wait_running(6)
    before = _slots(pool)
    expected = ["claude-1", "claude-2", "claude-3", "codex-1", "codex-2", "aider-1"]
    assert expected == list(before)
    os.kill(before["codex-2"]["pid"], signal.SIGKILL)

    def restarted() -> bool:
        slot = _slots(pool)["codex-2"]
        return slot["restarts"] == 1 and slot["state"] == "running"

    pool.wait(restarted, 30)
    after = _slots(pool)
    assert {n: (s["pid"], 0) for n, s in before.items() if n != "codex-2"} == {
        n: (s["pid"], s["restarts"]) for n, s in after.items() if n != "codex-2"
    }
    settings = load_settings(pool.env)
    kinds = {
        enqueue(pool.store, NewTask(title=f"{kind} {n}", kind=kind), settings=settings).id: kind
        for n in range(10)
        for kind in AGENT_OF_KIND
    }
    done = TaskStatus.DONE
    pool.wait(lambda: all(pool.store.tasks.get_task(t).status is done for t in kinds), 90)
    ran = {
        call["env"]["CORRAL_TASK_ID"]: (
            call["agent"],
            pool.store.workers.get_worker(call["env"]["CORRAL_WORKER_ID"]).name.rsplit("-", 1)[0],
        )
        for call in _invocations(pool)
    }
    assert {t: (AGENT_OF_KIND[k], AGENT_OF_KIND[k]) for t, k in kinds.items()} == ran
    shown = pool.corral("orchestrator", "status")
    assert "pool: 6 worker(s) in 3 group(s)" in shown.stdout
    assert "group codex: 2 worker(s) (running 2; 1 restart(s))  agent codex" in shown.stdout
    assert 0 == pool.corral("orchestrator", "stop", "--graceful").returncode


def test_a_bad_group_is_one_line_naming_it_and_nothing_starts(pool: Any) -> None:
    """`pool.group[2].workers = 0`: exit 2, one line naming the group's key, no row taken."""
    fleet = _fleet(pool)
    fleet.write_text(FLEET.replace("workers = 2", "workers = 0"))
    done = pool.corral("orchestrator", "start", "--config", str(fleet))
    assert (
        2,
        f"corral: error: {fleet}: pool.group[2].workers: expected a positive integer, got 0\n",
    ) == (
        done.returncode,
        done.stderr,
    )
    assert None is pool.store.orchestrators.get_orchestrator().pid


def test_each_groups_agents_get_their_own_accounts_environment_alone(pool: Any) -> None:
    """A claude group on `claude:work` and a codex group: the account's env reaches the
    claude agents and never the codex ones."""
    fleet = _fleet(pool)
    fleet.write_text(
        '[providers."claude:work"]\nenv = { CLAUDE_CONFIG_DIR = "/srv/claude-work" }\n'
        '[[pool.group]]\nagent = "claude"\nprovider = "claude:work"\nkinds = ["code"]\n'
        '[[pool.group]]\nagent = "codex"\nkinds = ["tests"]\n'
    )
    pool.env["FAKE_LOG_ENV"] = "CLAUDE_CONFIG_DIR"
    settings = load_settings(pool.env)
    tasks = [
        enqueue(pool.store, NewTask(title=kind, kind=kind), settings=settings).id
        for kind in ("code", "tests")
    ]
    pool.start("--config", str(fleet), workers=None)
    done = TaskStatus.DONE
    pool.wait(lambda: all(pool.store.tasks.get_task(t).status is done for t in tasks), 60)
    assert 0 == pool.corral("orchestrator", "stop", "--graceful").returncode
    seen = {call["agent"]: call["env"].get("CLAUDE_CONFIG_DIR") for call in _invocations(pool)}
    assert {"claude": "/srv/claude-work", "codex": None} == seen
