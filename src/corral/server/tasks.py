"""Task routes: list, read, add and answer tasks (the use cases `corral list`, `show`,
`add` and `answer` call).

GET  /api/tasks?status=S&queue=Q&kind=K&parent=ID&limit=N   viewer   the tasks, in the order added
GET  /api/tasks/{id}                              viewer   one task
POST /api/tasks                                   operator add one: a JSON object
POST /api/tasks/{id}/answer                       operator {text?}: a waiting task, ready
                                                           again, its next run told the text

With `view=seed001` the GETs answer seed 001's shape instead (seed_tasks.py).
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.errors import InvalidInput
from corral.model.tasks import NEW_TASK_FIELDS, NewTask, TaskFilter
from corral.model.tokens import Role
from corral.server import params, seed_tasks
from corral.server.answers import answer
from corral.server.auth import admitted, require
from corral.server.bodies import fields, json_object
from corral.server.context import store_of
from corral.server.paths import path_id
from corral.tasks import answer as answer_waiting
from corral.tasks import enqueue

# The JSON types of each JSON Schema type (a bool is not a number here).
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
}
# The fields of POST /api/tasks and the JSON types each must have: NewTask's table's.
BODY_TYPES: dict[str, tuple[type, ...]] = {
    f.name: _JSON_TYPES[f.schema["type"]] for f in NEW_TASK_FIELDS if f.schema is not None
}


def list_tasks(request: Request) -> Response:
    """The tasks that match the query's filters, in corral's shape or the seed's (`view`)."""
    store = store_of(request)
    require(request, store, Role.VIEWER)
    query = request.query_params
    seed = seed_tasks.view_of(query.get("view"))
    wanted = query.getlist("status")
    statuses = seed_tasks.board_filter(wanted) if seed else params.statuses(wanted)
    flt = TaskFilter(
        statuses=statuses,
        queue=query.get("queue"),
        kinds=tuple(query.getlist("kind")),
        parent_id=query.get("parent"),
        limit=params.limit(query.get("limit")),
    )
    return answer([seed_tasks.shape(t, seed) for t in store.list_tasks(flt)])


def get_task(request: Request) -> Response:
    """One task, in corral's shape or the seed's (`view`)."""
    store = store_of(request)
    require(request, store, Role.VIEWER)
    seed = seed_tasks.view_of(request.query_params.get("view"))
    return answer(seed_tasks.shape(store.get_task(path_id(request, "task_id", "task")), seed))


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
    request.app.state.work_signal.notify()
    return answer(task.to_dict(), 201)


async def answer_task(request: Request) -> Response:
    """Answer a task waiting for a person (`corral answer`): the task, ready again; 409
    naming its state when it is not waiting."""
    store, _ = await admitted(request, Role.OPERATOR)
    task_id = path_id(request, "task_id", "task")
    text = fields(await json_object(request, empty=True), {"text": (str,)}).get("text")
    task = await run_in_threadpool(answer_waiting, store, task_id, text)
    request.app.state.work_signal.notify()  # ready again: waiting claims look
    return answer(task.to_dict())


ROUTES = [
    Route("/api/tasks", list_tasks, methods=["GET"]),
    Route("/api/tasks", add_task, methods=["POST"]),
    Route("/api/tasks/{task_id}", get_task, methods=["GET"]),
    Route("/api/tasks/{task_id}/answer", answer_task, methods=["POST"]),
]


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    """NewTask's fields of the body; InvalidInput naming the first that is not one."""
    found = fields(body, BODY_TYPES)
    if "title" not in found:
        raise InvalidInput("title", "a non-empty title")
    if "depends_on" in found:
        if not all(isinstance(d, str) for d in found["depends_on"]):
            raise InvalidInput("depends_on", "a list of task ids")
        found["depends_on"] = tuple(found["depends_on"])
    if not all(isinstance(v, str) for v in found.get("labels", {}).values()):
        raise InvalidInput("labels", "an object of strings")
    return found
