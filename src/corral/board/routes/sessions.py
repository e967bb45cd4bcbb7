"""Seed 001's session routes: spawn a session for the pool, list sessions, kill one.

POST   /api/sessions/spawn              worker    a session task; 201, or 200 when its label
                                                  was in use (the session it names)
GET    /api/sessions?status=S&limit=N   viewer    the sessions, newest first
DELETE /api/sessions/{id}               worker    cancel it; its runner ends the process

Each calls one use case of corral.board.usecases.sessions; board/model/sessions.py has the
session's shape. A worker token is a slot (seed 001's loop needs no other token): it
spawns in its queues only, each session recorded as its slot's (and linked to the claim
it holds), and kills only its slot's sessions; an operator's spawns and kills any.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.board.model.sessions import NewSession, session_view
from corral.board.usecases import sessions
from corral.foundation.errors import InvalidInput
from corral.foundation.settings import Settings
from corral.model.api_tokens import ApiToken, Role
from corral.server import params
from corral.server.answers import answer
from corral.server.auth import Denied, require, within_queues
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
    "timeoutMs": (int,),
}


async def spawn(request: Request) -> Response:
    """Add a session from the seed's spawn body; the token is checked before it is read."""
    token = await run_in_threadpool(require, request, store_of(request))
    body = await json_object(request)
    response: Response = await run_in_threadpool(_spawn, request, token, body)
    return response


def _spawn(request: Request, token: ApiToken, body: dict[str, Any]) -> Response:
    found = fields(body, SPAWN_FIELDS)
    settings = request.app.state.settings
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
        timeout_s=_timeout_s(found.get("timeoutMs"), settings),
        slot=token.name if token.role is Role.WORKER else None,
    )
    within_queues(token, spec.queue)
    task, added = sessions.spawn(store_of(request), spec, settings=settings)
    return answer(session_view(task), 201 if added else 200)


def list_sessions(request: Request) -> Response:
    """The sessions, newest first (filters: corral's task states, limit)."""
    store = store_of(request)
    require(request, store)
    query = request.query_params
    found = sessions.listed(
        store,
        statuses=params.statuses(query.getlist("status")),
        limit=params.limit(query.get("limit")),
    )
    return answer([session_view(t) for t in found])


def _timeout_s(raw: int | None, settings: Settings) -> float | None:
    """The seconds `timeoutMs` asks for (None: the board's default); InvalidInput naming it
    above `[board] max_timeout`."""
    if raw is None:
        return None
    most = settings.board_max_timeout_s
    if not 1 <= raw <= most * 1000:
        raise InvalidInput("timeoutMs", f"milliseconds from 1 to {round(most * 1000)}", raw)
    return raw / 1000


def kill(request: Request) -> Response:
    """Cancel the session; the session as it is then. A worker token kills only the
    sessions its slot spawned (403 otherwise, before anything changes)."""
    store = store_of(request)
    token = require(request, store)
    session = path_id(request, "session_id", "session")
    if token.role is Role.WORKER:
        spawned = {t.payload.get("slot") for t in sessions.find(store, session)}
        if spawned != {token.name}:
            raise Denied(403, f"token {token.name!r} kills only the sessions its slot spawned")
    killed = sessions.kill(store, session)
    return answer(session_view(killed[0]))


ROUTES = [
    Route("/api/sessions/spawn", spawn, methods=["POST"]),
    Route("/api/sessions", list_sessions, methods=["GET"]),
    Route("/api/sessions/{session_id:path}", kill, methods=["DELETE"]),
]
