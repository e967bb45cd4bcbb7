"""POST /api/tasks/{id}/answer through a real `corral serve` on each store: an operator
answers a task waiting for a person; everyone else, and every task that is not waiting,
is refused with nothing written."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
from typing import Any

from corral import NewTask, NewWorker
from corral.model.waiting import WaitKind, reason
from corral.usecases import claims, tasks, workers

from .conftest import Server

QUESTION = reason(WaitKind.QUESTION, "Which database should the service use?")


def _waiting_and_ready(served: Server) -> tuple[str, str]:
    """A task a run left waiting on a question, and a ready one, in the served store."""
    with served.store() as store:
        waiting, ready = (tasks.enqueue(store, NewTask(title=t)).id for t in ("asks", "idle"))
        worker = workers.register(store, NewWorker(name="w1")).worker.id
        token = claims.claim(store, waiting, worker).token
        claims.wait(store, waiting, reason=QUESTION, token=token)
    return waiting, ready


def _answer(served: Server, task_id: str, token: str, body: Any = None) -> tuple[int, Any]:
    raw = None if body is None else json.dumps(body).encode()
    return served.call("POST", f"/api/tasks/{task_id}/answer", token, raw)


def _task(served: Server, task_id: str) -> dict[str, Any]:
    shown: dict[str, Any] = json.loads(served.corral("show", task_id, "--json").stdout)
    return shown


def test_an_operator_answers_a_waiting_task_over_http(served: Server) -> None:
    """200 with the task, ready, the text and the question it answered kept for its next run."""
    operator = served.token("operator")
    waiting, _ = _waiting_and_ready(served)
    served.start()
    status, task = _answer(served, waiting, operator, {"text": "staging"})
    assert (200, "ready", "staging", QUESTION, None) == (
        status,
        task["status"],
        task["answer"],
        task["answered_reason"],
        task["wait_reason"],
    )
    assert task == {k: v for k, v in _task(served, waiting).items() if k in task}


def test_an_answer_without_a_body_sends_the_task_back_with_no_text(served: Server) -> None:
    """No body at all: ready again, no answer text."""
    operator = served.token("operator")
    waiting, _ = _waiting_and_ready(served)
    served.start()
    status, task = _answer(served, waiting, operator)
    assert (200, "ready", None) == (status, task["status"], task["answer"])


def test_answers_that_may_not_be_given_are_refused_and_write_nothing(served: Server) -> None:
    """A viewer or worker token: 403; a ready task: 409 naming its state; no such task: 404;
    a text that is not a string: 422 naming `text`. The task still waits after each."""
    viewer, worker, operator = (served.token(r) for r in ("viewer", "worker", "operator"))
    waiting, ready = _waiting_and_ready(served)
    served.start()
    before = _task(served, waiting)
    refused = [
        _answer(served, waiting, viewer, {"text": "x"}),
        _answer(served, waiting, worker, {"text": "x"}),
        _answer(served, ready, operator, {"text": "x"}),
        _answer(served, "t-nosuchtask0", operator, {"text": "x"}),
        _answer(served, waiting, operator, {"text": 5}),
        _answer(served, waiting, operator, {"txt": "x"}),
    ]
    assert [403, 403, 409, 404, 422, 422] == [status for status, _ in refused]
    assert f"cannot answer task {ready}: it is ready" == refused[2][1]["error"]
    assert ("text", "ready") == (refused[4][1]["field"], _task(served, ready)["status"])
    assert before == _task(served, waiting)


def test_an_answer_raises_a_task_budget_over_http_and_a_bad_figure_is_422(served: Server) -> None:
    """`budget` "+1.50": the cap raised in the answer's transaction; a figure of another form
    is refused naming it, the task still waiting."""
    operator = served.token("operator")
    with served.store() as store:
        budget = {"budget": {"max_cost_usd": 1.0}}
        task_id = tasks.enqueue(store, NewTask(title="spends", payload=budget)).id
        worker = workers.register(store, NewWorker(name="w1")).worker.id
        token = claims.claim(store, task_id, worker).token
        claims.wait(store, task_id, reason=reason(WaitKind.BUDGET, "$1.02 of $1.00"), token=token)
    served.start()
    status, body = _answer(served, task_id, operator, {"budget": "1.50"})
    assert (422, "budget") == (status, body["field"])
    assert "waiting" == _task(served, task_id)["status"]
    status, task = _answer(served, task_id, operator, {"budget": "+1.50"})
    assert (200, "ready", {"max_cost_usd": 2.5}) == (
        status,
        task["status"],
        task["payload"]["budget"],
    )
