"""Task routes: list, read and add tasks (the use cases `corral list`, `show`, `add` call).

GET  /api/tasks?status=S&queue=Q&kind=K&limit=N   viewer   the tasks, in the order added
GET  /api/tasks/{id}                              viewer   one task
POST /api/tasks                                   operator add one: a JSON object
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.errors import InvalidInput
from corral.model.states import TaskStatus
from corral.model.tasks import NewTask, TaskFilter
from corral.model.tokens import Role
from corral.server.answers import answer
from corral.server.auth import require
from corral.server.bodies import json_object
from corral.server.context import store_of
from corral.tasks import enqueue

MAX_LIMIT = 10_000
# The fields of POST /api/tasks and the JSON type each must have (bool is not an int here).
NEW_TASK_FIELDS: dict[str, tuple[type, ...]] = {
    "title": (str,),
    "description": (str,),
    "queue": (str,),
    "kind": (str,),
    "priority": (int,),
    "payload": (dict,),
    "labels": (dict,),
    "depends_on": (list,),
    "assignee": (str,),
    "max_attempts": (int,),
    "timeout_s": (int, float),
    "run_after_s": (int, float),
    "requires_review": (bool,),
}


def list_tasks(request: Request) -> Response:
    """The tasks that match the query's filters."""
    store = store_of(request)
    require(request, store, Role.VIEWER)
    query = request.query_params
    statuses = tuple(_status(s) for s in query.getlist("status"))
    flt = TaskFilter(
        statuses=statuses,
        queue=query.get("queue"),
        kinds=tuple(query.getlist("kind")),
        limit=_limit(query.get("limit")),
    )
    return answer([t.to_dict() for t in store.list_tasks(flt)])


def get_task(request: Request) -> Response:
    """One task."""
    store = store_of(request)
    require(request, store, Role.VIEWER)
    return answer(store.get_task(request.path_params["task_id"]).to_dict())


async def add_task(request: Request) -> Response:
    """Add a task from a JSON object of NewTask's fields; the task, 201. The body is read
    here (bounded); the store's calls block, so they run on a worker thread."""
    body = await json_object(request)
    response: Response = await run_in_threadpool(_add, request, body)
    return response


def _add(request: Request, body: dict[str, Any]) -> Response:
    store = store_of(request)
    require(request, store, Role.OPERATOR)
    spec = NewTask(**_fields(body))
    task = enqueue(store, spec, settings=request.app.state.settings)
    return answer(task.to_dict(), 201)


ROUTES = [
    Route("/api/tasks", list_tasks, methods=["GET"]),
    Route("/api/tasks", add_task, methods=["POST"]),
    Route("/api/tasks/{task_id}", get_task, methods=["GET"]),
]


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    """The body's fields, each of its type; InvalidInput naming the first that is not."""
    fields: dict[str, Any] = {}
    for name, value in body.items():
        types = NEW_TASK_FIELDS.get(name)
        if types is None:
            raise InvalidInput(name, "one of the fields " + ", ".join(NEW_TASK_FIELDS))
        if (isinstance(value, bool) and bool not in types) or not isinstance(value, types):
            raise InvalidInput(name, f"a JSON {_json_type(types)}", value)
        fields[name] = value
    if "title" not in fields:
        raise InvalidInput("title", "a non-empty title")
    if "depends_on" in fields:
        if not all(isinstance(d, str) for d in fields["depends_on"]):
            raise InvalidInput("depends_on", "a list of task ids")
        fields["depends_on"] = tuple(fields["depends_on"])
    if not all(isinstance(v, str) for v in fields.get("labels", {}).values()):
        raise InvalidInput("labels", "an object of strings")
    return fields


def _json_type(types: tuple[type, ...]) -> str:
    names = {str: "string", int: "whole number", float: "number", dict: "object", list: "array"}
    return " or ".join(names.get(t, "true or false") for t in types)


def _status(raw: str) -> TaskStatus:
    try:
        return TaskStatus(raw)
    except ValueError:
        raise InvalidInput("status", "one of " + ", ".join(TaskStatus), raw) from None


def _limit(raw: str | None) -> int:
    if raw is None:
        return 1000
    # The length first: int() refuses strings of thousands of digits with an error of its own.
    if len(raw) > 5 or not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise InvalidInput("limit", f"a whole number from 1 to {MAX_LIMIT}", raw)
    return int(raw)
