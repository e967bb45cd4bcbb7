"""`[files] mirror` with real processes: an agent that only reads and writes files finishes
its task, asks a question, sends a message through its outbox; a wrong token is refused;
`.corral/state/` follows the task and its worker; an orchestrator killed with SIGKILL
mid-run takes in no line twice."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corral.model.events import EventFilter
from corral.model.states import TaskStatus

# The agent: appends its lines to $CORRAL_OUTBOX (each `%s`: its claim's token), with
# `wait` standing for "until the file $GO exists", then exits 0.
AGENT = """#!/bin/sh
for line in {lines}; do
    if [ "$line" = wait ]; then
        while [ ! -e "$GO" ]; do sleep 0.02; done
    else
        printf "$line\\n" "$CORRAL_CLAIM_TOKEN" >> "$CORRAL_OUTBOX"
    fi
done
"""
MESSAGE = '{"verb": "msg", "token": %s, "type": "progress", "body": {"step": 1}}'
DONE = '{"verb": "done", "token": %s, "result": {"via": "outbox"}}'


def agent_writing(pool: Any, *lines: str) -> Path:
    """Make the pool's agent a shell script appending `lines` to its outbox, mirror on;
    the file that lets it past a `wait`."""
    quoted = " ".join("'" + line.replace("'", "'\\''") + "'" for line in lines)
    pool.agent.write_text(AGENT.format(lines=quoted))
    go = pool.folder / "go"
    pool.env.update(CORRAL_FILES_MIRROR="true", GO=str(go))
    return go


def status(pool: Any, task_id: str) -> TaskStatus:
    return pool.store.tasks.get_task(task_id).status  # type: ignore[no-any-return]


def messages(pool: Any) -> list[Any]:
    found = pool.store.messages.list_messages(recipient="orchestrator", after_id=0, unacked=False)
    return [(m.type, m.body) for m in found]


def test_an_agent_finishes_its_task_through_the_outbox(any_pool: Any) -> None:
    """done (with a result) and a message, from a script that writes only files."""
    pool = any_pool
    agent_writing(pool, MESSAGE, DONE)
    (task_id,) = pool.add(1)
    pool.start(workers=1)
    pool.wait(lambda: status(pool, task_id) is TaskStatus.DONE)
    assert {"via": "outbox"} == pool.store.tasks.get_task(task_id).result
    assert [("progress", {"step": 1})] == messages(pool)


def test_a_question_through_the_outbox_puts_the_task_in_waiting(pool: Any) -> None:
    """ask, then exit 0: the task waits for a person (not done), the question its reason."""
    agent_writing(pool, '{"verb": "ask", "token": %s, "question": "Which database?"}')
    (task_id,) = pool.add(1)
    pool.start(workers=1)
    pool.wait(lambda: status(pool, task_id) is TaskStatus.WAITING)
    assert "question: Which database?" == pool.store.tasks.get_task(task_id).wait_reason


def test_a_wrong_token_is_refused(pool: Any) -> None:
    """done under another token is refused and logged; the run ends as its exit says."""
    agent_writing(pool, '{"verb": "done", "token": 99, "result": {"via": "outbox"}}')
    (task_id,) = pool.add(1)
    pool.start(workers=1)
    pool.wait(lambda: status(pool, task_id) is TaskStatus.DONE)
    assert pool.store.tasks.get_task(task_id).result is None
    log = (pool.folder / ".corral" / "logs" / "workers" / "slot-1.log").read_text()
    assert "outbox.refused" in log and "token 99 is stale" in log


def read(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    return document


def test_the_state_folder_follows_the_task_and_its_worker(any_pool: Any) -> None:
    """A document per live worker and per task in hand, written as they change and removed
    as they end; one left by a crash is removed at start."""
    pool = any_pool
    go = agent_writing(pool, "wait")
    state = pool.folder / ".corral" / "state"
    (state / "tasks").mkdir(parents=True)
    (state / "tasks" / "t-leftover.json").write_text("{}")
    (task_id,) = pool.add(1)
    pool.start(workers=1)
    task_doc = state / "tasks" / f"{task_id}.json"
    pool.wait(task_doc.exists)
    assert not (state / "tasks" / "t-leftover.json").exists()
    assert "running" == read(task_doc)["status"]
    # `*.json`: a document being replaced has a `.status-*.tmp` beside it for a moment
    (worker_doc,) = (state / "workers").glob("*.json")
    pool.wait(lambda: read(worker_doc)["status"] == "busy")
    assert 0o600 == task_doc.stat().st_mode & 0o777
    go.touch()
    pool.wait(lambda: not task_doc.exists())
    pool.wait(lambda: read(worker_doc)["status"] == "idle")
    assert 0 == pool.corral("orchestrator", "stop").returncode
    pool.started[0].wait(timeout=30)
    assert [] == sorted(p.name for p in (state / "workers").iterdir())  # no temporary left


def test_an_orchestrator_killed_mid_run_takes_in_no_line_twice(pool: Any) -> None:
    """SIGKILL to the orchestrator after a message was taken in: its runner goes on, the
    next orchestrator adopts it, done is applied once and the message is not sent again."""
    go = agent_writing(pool, MESSAGE, "wait", DONE)
    (task_id,) = pool.add(1)
    first = pool.start(workers=1)
    pool.wait(lambda: len(messages(pool)) == 1)
    first.kill()
    first.wait(timeout=10)
    pool.start(workers=1)
    pool.wait_running(1)
    go.touch()
    pool.wait(lambda: status(pool, task_id) is TaskStatus.DONE)
    assert {"via": "outbox"} == pool.store.tasks.get_task(task_id).result
    assert [("progress", {"step": 1})] == messages(pool)
    flt = EventFilter(task_id=task_id, names=("task.completed",))
    assert 1 == len(pool.store.events.list_events(flt))
