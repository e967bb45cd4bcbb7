"""Seed 001's task routes: the board view of tasks, and PATCH moving a task on the board.

GET   /api/tasks?view=seed001[&status=todo...]   viewer     the tasks in the seed's shape
GET   /api/tasks/{id}?view=seed001               viewer     one task in the seed's shape
PATCH /api/tasks/{id}                            worker     {"status", "metadata", "claimToken"}

The GETs are tasks.py's, which asks `view_of` which shape to answer: without `view`
they answer corral's own (nothing changes for its clients), with `view=seed001` the
board's (model/board.py), whose `status` filter then takes the board's words. A PATCH
calls corral.board.move, the one use case that maps a column onto a fenced use case. A
worker token acts as the live worker of its own name (a seed slot: create it with
`--name slot-1`), on tasks of its token's queues only; an operator token acts as
`corral done` does without --token, on whatever claim is active.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral import board
from corral.documents import MAX_INT64
from corral.errors import InvalidInput
from corral.model.board import board_status, board_task, corral_statuses
from corral.model.states import TaskStatus
from corral.model.tasks import Task
from corral.model.tokens import Role, Token
from corral.server.answers import answer
from corral.server.auth import require, within_queues
from corral.server.bodies import fields, json_object, quoted
from corral.server.context import store_of
from corral.server.paths import path_id

VIEW = "seed001"
PATCH_FIELDS: dict[str, tuple[type, ...]] = {
    "status": (str,),
    "metadata": (dict,),
    "claimToken": (int,),
}


def view_of(raw: str | None) -> bool:
    """Whether the query asks for the seed's shape (`view=seed001`); 422 for another view."""
    if raw is None:
        return False
    if raw != VIEW:
        raise InvalidInput("view", f"{VIEW} (or no view, for corral's shape)", quoted(raw))
    return True


def board_filter(raw: list[str]) -> tuple[TaskStatus, ...]:
    """corral's states the board words of a `status` filter stand for."""
    return tuple(s for shown in raw for s in corral_statuses(quoted(shown)))


def shape(task: Task, seed: bool) -> dict[str, Any]:
    """The task in the shape asked for."""
    return board_task(task) if seed else task.to_dict()


async def patch_task(request: Request) -> Response:
    """Move the task to the column the body names; the task then, in the seed's shape.
    The token is checked before the body is read; the store's calls run on a thread."""
    token = await run_in_threadpool(require, request, store_of(request), Role.WORKER)
    body = await json_object(request)
    response: Response = await run_in_threadpool(_patch, request, token, body)
    return response


def _patch(request: Request, token: Token, body: dict[str, Any]) -> Response:
    store = store_of(request)
    task_id = path_id(request, "task_id", "task")
    found = fields(body, PATCH_FIELDS)
    status = board_status(quoted(found.get("status")))
    claim_token = found.get("claimToken")
    if claim_token is not None and not 1 <= claim_token <= MAX_INT64:
        raise InvalidInput("claimToken", "a fencing token (a whole number from 1)", claim_token)
    worker = None
    if token.role is Role.WORKER:
        within_queues(token, store.get_task(task_id).queue)
        worker = token.name
    task = board.move(
        store,
        task_id,
        status,
        worker=worker,
        token=claim_token,
        metadata=found.get("metadata"),
        settings=request.app.state.settings,
    )
    return answer(board_task(task))


ROUTES = [Route("/api/tasks/{task_id}", patch_task, methods=["PATCH"])]
