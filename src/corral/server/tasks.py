"""Task routes: list, read, add and answer tasks (the use cases `corral list`, `show`,
`add` and `answer` call).

GET  /api/tasks?status=S&queue=Q&kind=K&parent=ID&limit=N   viewer   the tasks, in the order added
GET  /api/tasks/{id}                              viewer   one task
POST /api/tasks                                   operator add one: a JSON object
POST /api/tasks/{id}/answer                       operator {text?, budget?}: a waiting task, ready
                                                           again, its next run told the text

With `view=seed001` the GETs answer seed 001's shape instead (board/routes/board_tasks.py).
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.board.routes import board_tasks
from corral.foundation.errors import InvalidInput
from corral.model import waiting
from corral.model.budgets import parse_raise
from corral.model.tasks import NEW_TASK_FIELDS, NewTask, TaskFilter
from corral.server import params
from corral.server.answers import answer
from corral.server.auth import admitted, require
from corral.server.bodies import fields, json_object
from corral.server.context import store_of
from corral.server.paths import path_id
from corral.usecases.tasks import answer as answer_waiting
from corral.usecases.tasks import enqueue

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
    require(request, store)
    query = request.query_params
    seed = board_tasks.view_of(query.get("view"))
    wanted = query.getlist("status")
    statuses = board_tasks.board_filter(wanted) if seed else params.statuses(wanted)
    flt = TaskFilter(
        statuses=statuses,
        queue=query.get("queue"),
        kinds=tuple(query.getlist("kind")),
        parent_id=query.get("parent"),
        limit=params.limit(query.get("limit")),
    )
    settings = request.app.state.settings
    return answer([board_tasks.shape(t, seed, settings) for t in store.tasks.list_tasks(flt)])


def get_task(request: Request) -> Response:
    """One task, in corral's shape or the seed's (`view`)."""
    store = store_of(request)
    require(request, store)
    seed = board_tasks.view_of(request.query_params.get("view"))
    task = store.tasks.get_task(path_id(request, "task_id", "task"))
    return answer(board_tasks.shape(task, seed, request.app.state.settings))


async def add_task(request: Request) -> Response:
    """Add a task from a JSON object of NewTask's fields; the task, 201. The body is read
    here (bounded); the store's calls block, so they run on a worker thread."""
    body = await json_object(request)
    response: Response = await run_in_threadpool(_add, request, body)
    return response


def _add(request: Request, body: dict[str, Any]) -> Response:
    store = store_of(request)
    require(request, store)
    spec = NewTask(**_fields(body))
    task = enqueue(store, spec, settings=request.app.state.settings)
    request.app.state.work_signal.notify()
    return answer(task.to_dict(), 201)


async def answer_task(request: Request) -> Response:
    """Answer a task waiting for a person (`corral answer`): the task, ready again; 409
    naming its state when it is not waiting."""
    store, _ = await admitted(request)
    task_id = path_id(request, "task_id", "task")
    given = fields(
        await json_object(request, empty=True),
        {"text": (str,), "budget": (str,), "decision": (str,)},
    )
    raise_by = None if "budget" not in given else parse_raise("budget", given["budget"])
    text = given.get("text")
    if "decision" in given:  # a permission's: allow, or deny with `text` as the reason
        if given["decision"] not in (waiting.ALLOW, waiting.DENY):
            raise InvalidInput("decision", "allow or deny", given["decision"])
        text = waiting.permission_answer(given["decision"] == waiting.ALLOW, text)
    task = await run_in_threadpool(answer_waiting, store, task_id, text, budget=raise_by)
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
