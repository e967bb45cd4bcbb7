"""`corral answer` and the task state it ends (`waiting`), as a user sees them in the CLI:
`why`, `show`, `list --status waiting`, `status`, then `answer`, `retry` or `cancel`."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
from typing import Any

import pytest

from corral import NewTask, NewWorker, open_store
from corral.model.waiting import WaitKind, reason
from corral.usecases import claims, tasks, workers

REFUSED = reason(WaitKind.REFUSED, "Bash, Edit")


def _waiting(db: str, title: str = "deploy the docs") -> str:
    """A task in store `db` that a run left waiting for a person, refused Bash and Edit."""
    with open_store(db) as store:
        task_id = tasks.enqueue(store, NewTask(title=title)).id
        worker = workers.register(store, NewWorker(name="w1")).worker.id
        token = claims.claim(store, task_id, worker).token
        claims.wait(store, task_id, reason=REFUSED, token=token)
    return task_id


def _show(cli: Any, task_id: str) -> dict[str, Any]:
    shown: dict[str, Any] = json.loads(cli("show", task_id, "--json").out)
    return shown


def test_a_waiting_task_says_why_everywhere_a_user_looks(cli: Any) -> None:
    """why, show, list --status waiting and status name the task and its reason."""
    task_id = _waiting(cli.db)
    why = cli("why", task_id)
    assert (0, f"{task_id} is waiting:") == (why.code, why.out.splitlines()[0])
    assert f"waiting for a person: {REFUSED}; `corral answer {task_id} [TEXT]`" in why.out
    assert "wait_reason:" in cli("show", task_id).out
    listed = cli("list", "--status", "waiting", "--json")
    assert [(task_id, "waiting", REFUSED)] == [
        (t["id"], t["status"], t["wait_reason"]) for t in json.loads(listed.out)
    ]
    status = cli("status")
    assert "tasks waiting for a person: 1" in status.out
    assert f"  {task_id} since " in status.out and f": {REFUSED}  deploy the docs" in status.out
    (waiting,) = json.loads(cli("status", "--json").out)["waiting_tasks"]
    assert (task_id, REFUSED, "deploy the docs") == (
        waiting["task_id"],
        waiting["reason"],
        waiting["title"],
    )


def test_answer_sends_the_task_back_to_ready_with_the_text(cli: Any) -> None:
    """`corral answer ID TEXT`: exit 0, ready, the answer and the reason it answered kept."""
    task_id = _waiting(cli.db)
    done = cli("answer", task_id, "You may run Bash; edit docs/ only.")
    assert (0, f"{task_id} ready (answered)\n", "") == (done.code, done.out, done.err)
    shown = _show(cli, task_id)
    assert ("ready", None, "You may run Bash; edit docs/ only.", REFUSED) == (
        shown["status"],
        shown["wait_reason"],
        shown["answer"],
        shown["answered_reason"],
    )
    assert "task.answered" in cli("events", "--task", task_id).out


def test_answer_reads_the_text_from_standard_input_after_a_dash(cli: Any) -> None:
    """`corral answer ID -` takes the whole of stdin, lines and all."""
    task_id = _waiting(cli.db)
    text = "Use the staging database.\nDo not touch production.\n"
    assert 0 == cli("answer", task_id, "-", input=text).code
    assert text.strip() == _show(cli, task_id)["answer"]


def test_answer_without_text_says_carry_on(cli: Any) -> None:
    """`corral answer ID` alone: ready again with no answer text, the reason still told."""
    task_id = _waiting(cli.db)
    assert 0 == cli("answer", task_id).code
    shown = _show(cli, task_id)
    assert ("ready", None, REFUSED) == (shown["status"], shown["answer"], shown["answered_reason"])


@pytest.mark.parametrize(("command", "status"), [("retry", "ready"), ("cancel", "cancelled")])
def test_retry_or_cancel_ends_the_wait_too(cli: Any, command: str, status: str) -> None:
    """retry sends a waiting task back afresh, cancel ends it; either way it no longer waits."""
    task_id = _waiting(cli.db)
    ended = cli(command, task_id, "--json")
    assert (0, status, None) == (
        ended.code,
        json.loads(ended.out)["status"],
        json.loads(ended.out)["wait_reason"],
    )
    assert "tasks waiting for a person: none" in cli("status").out
