"""Seed 001's session routes: spawn a session for the pool, list sessions, kill one.

POST   /api/sessions/spawn              operator  a session task; 201, or 200 when its label
                                                  was in use (the session it names)
GET    /api/sessions?status=S&limit=N   viewer    the sessions, newest first
DELETE /api/sessions/{id}               operator  cancel it; its runner ends the process

Each calls one use case of corral.sessions; model/sessions.py has the session's shape.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral import sessions
from corral.errors import InvalidInput
from corral.model.sessions import NewSession, session_view
from corral.model.tokens import Role
from corral.server import params
from corral.server.answers import answer
from corral.server.auth import require
from corral.server.bodies import fields, json_object
from corral.server.context import store_of
from corral.server.paths import path_id

# The seed's spawn body; `queue` is corral's (default `default`).
SPAWN_FIELDS: dict[str, tuple[type, ...]] = {
    "prompt": (str,),
    "sessionLabel": (str,),
    "model": (str,),
    "channel": (str,),
    "thinking": (str,),
    "autoStart": (bool,),
    "queue": (str,),
}


async def spawn(request: Request) -> Response:
    """Add a session from the seed's spawn body; the token is checked before it is read."""
    await run_in_threadpool(require, request, store_of(request), Role.OPERATOR)
    body = await json_object(request)
    response: Response = await run_in_threadpool(_spawn, request, body)
    return response


def _spawn(request: Request, body: dict[str, Any]) -> Response:
    found = fields(body, SPAWN_FIELDS)
    if found.get("autoStart") is False:
        raise InvalidInput("autoStart", "true: a session starts as soon as a worker is free")
    if "prompt" not in found:
        raise InvalidInput("prompt", "a non-empty prompt")
    spec = NewSession(
        prompt=found["prompt"],
        label=found.get("sessionLabel"),
        model=found.get("model"),
        channel=found.get("channel"),
        thinking=found.get("thinking"),
        queue=found.get("queue", "default"),
    )
    task, added = sessions.spawn(store_of(request), spec, settings=request.app.state.settings)
    return answer(session_view(task), 201 if added else 200)


def list_sessions(request: Request) -> Response:
    """The sessions, newest first (filters: corral's task states, limit)."""
    store = store_of(request)
    require(request, store, Role.VIEWER)
    query = request.query_params
    found = sessions.listed(
        store,
        statuses=params.statuses(query.getlist("status")),
        limit=params.limit(query.get("limit")),
    )
    return answer([session_view(t) for t in found])


def kill(request: Request) -> Response:
    """Cancel the session; the session as it is then."""
    store = store_of(request)
    require(request, store, Role.OPERATOR)
    killed = sessions.kill(store, path_id(request, "session_id", "session"))
    return answer(session_view(killed[0]))


ROUTES = [
    Route("/api/sessions/spawn", spawn, methods=["POST"]),
    Route("/api/sessions", list_sessions, methods=["GET"]),
    Route("/api/sessions/{session_id:path}", kill, methods=["DELETE"]),
]
