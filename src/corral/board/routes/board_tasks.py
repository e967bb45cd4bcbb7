"""Seed 001's task routes: the board view of tasks, and PATCH moving a task on the board.

GET   /api/tasks?view=seed001[&status=todo...]   viewer     the tasks in the seed's shape
GET   /api/tasks/{id}?view=seed001               viewer     one task in the seed's shape
PATCH /api/tasks/{id}                            worker     {"status", "metadata", "claimToken"}

The GETs are server/tasks.py's, which asks `view_of` which shape to answer: without `view`
they answer corral's own (nothing changes for its clients), with `view=seed001` the
board's (board/model/columns.py), whose `status` filter then takes the board's words. A PATCH
calls corral.board.usecases.moves.move, the one use case that maps a column onto a fenced
use case. A worker token acts as the live worker of its own name (a seed slot: create it with
`--name slot-1`), on tasks of its token's queues only; its claim (`in-progress`) registers
that worker first if it has none (board/usecases/heartbeats.py). An operator token acts
as `corral done` does without --token, on whatever claim is active.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.board.model.columns import board_status, board_task, corral_statuses, timeout_s
from corral.board.routes.heartbeats import slot_spec
from corral.board.usecases import moves
from corral.foundation.documents import MAX_INT64
from corral.foundation.errors import InvalidInput
from corral.foundation.settings import Settings
from corral.model.api_tokens import ApiToken, Role
from corral.model.states import TaskStatus
from corral.model.tasks import Task
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


def shape(task: Task, seed: bool, settings: Settings) -> dict[str, Any]:
    """The task in the shape asked for."""
    return seed_task(task, settings) if seed else task.to_dict()


def seed_task(task: Task, settings: Settings) -> dict[str, Any]:
    """The task in the seed's shape, its timeout the board's (`[board]` settings)."""
    timeout = timeout_s(task, settings.board_timeout_s, settings.board_max_timeout_s)
    return board_task(task, timeout)


async def patch_task(request: Request) -> Response:
    """Move the task to the column the body names; the task then, in the seed's shape.
    The token is checked before the body is read; the store's calls run on a thread."""
    token = await run_in_threadpool(require, request, store_of(request))
    body = await json_object(request)
    response: Response = await run_in_threadpool(_patch, request, token, body)
    return response


def _patch(request: Request, token: ApiToken, body: dict[str, Any]) -> Response:
    store = store_of(request)
    task_id = path_id(request, "task_id", "task")
    found = fields(body, PATCH_FIELDS)
    status = board_status(quoted(found.get("status")))
    claim_token = found.get("claimToken")
    if claim_token is not None and not 1 <= claim_token <= MAX_INT64:
        raise InvalidInput("claimToken", "a fencing token (a whole number from 1)", claim_token)
    worker = slot = None
    settings = request.app.state.settings
    if token.role is Role.WORKER:
        within_queues(token, store.tasks.get_task(task_id).queue)
        worker, slot = token.name, slot_spec(request, token)
    task = moves.move(
        store,
        task_id,
        status,
        worker=worker,
        slot=slot,
        token=claim_token,
        metadata=found.get("metadata"),
        settings=settings,
    )
    return answer(seed_task(task, settings))


ROUTES = [Route("/api/tasks/{task_id}", patch_task, methods=["PATCH"])]
