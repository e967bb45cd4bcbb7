"""Seed 001's heartbeat routes: every slot's heartbeat, read from the store at each call; and a
slot's own heartbeat, which keeps its corral worker alive (and registers it first).

GET  /api/heartbeats   viewer   {"workers": {"slot-1": {...}, ...}}, the seed's file as it is
POST /api/heartbeats   worker   one slot's heartbeat in the seed's schema; that slot's entries

corral.board.usecases.heartbeats is the use case; board/model/heartbeats.py maps corral's
workers onto the seed's schema (slot, status idle/working/offline, task, taskTitle,
sessionId, lastUpdate, startedAt, metadata with workerPid, workerVersion, restartCount).
A POST says only that the slot lives (or, `offline`, that it stopped): what it holds and
runs is corral's to say, from its claims and sessions, so the loop's own `task`,
`sessionId` and instants are taken as the seed writes them and not recorded.
"""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.board.usecases import heartbeats
from corral.foundation.errors import InvalidInput
from corral.model.api_tokens import ApiToken, Role
from corral.model.names import check_worker_name
from corral.model.workers import NewWorker
from corral.server.answers import answer
from corral.server.auth import Denied, require
from corral.server.bodies import fields, json_object, quoted
from corral.server.context import store_of
from corral.server.ownership import own_worker_spec

NONE = type(None)
STATUSES = ("idle", "working", "offline")
# The seed's heartbeat (its "Schema Definition"), field by field.
BEAT_FIELDS: dict[str, tuple[type, ...]] = {
    "slot": (str,),
    "status": (str,),
    "task": (str, NONE),
    "taskTitle": (str, NONE),
    "sessionId": (str, NONE),
    "lastUpdate": (int, float, NONE),
    "startedAt": (int, float, NONE),
    "metadata": (dict, NONE),
}
MAX_VERSION_CHARS = 100
MAX_REASON_CHARS = 200
# Where a slot's worker runs, when the request says nothing of its client.
UNKNOWN_HOST = "unknown"


def list_heartbeats(request: Request) -> Response:
    """The heartbeat of each slot, keyed by slot as the seed's file is."""
    store = store_of(request)
    require(request, store)
    return answer({"workers": heartbeats.slots(store)})


async def post_heartbeat(request: Request) -> Response:
    """A slot's heartbeat; the token is checked before the body is read."""
    token = await run_in_threadpool(require, request, store_of(request))
    body = await json_object(request)
    response: Response = await run_in_threadpool(_post, request, token, body)
    return response


def _post(request: Request, token: ApiToken, body: dict[str, Any]) -> Response:
    store = store_of(request)
    found = fields(body, BEAT_FIELDS)
    slot = found.get("slot")
    if slot is None:
        raise InvalidInput("slot", "the slot's name (the worker token's name)")
    check_worker_name("slot", slot)
    status = found.get("status")
    if status not in STATUSES:
        raise InvalidInput("status", "one of " + ", ".join(STATUSES), quoted(status))
    if token.role is Role.WORKER and slot != token.name:
        raise Denied(403, f"token {token.name!r} heartbeats only for its slot {token.name!r}")
    metadata = found.get("metadata") or {}
    if status == "offline":
        reason = _text(metadata, "offlineReason", MAX_REASON_CHARS) or heartbeats.OFFLINE
        ids = {w.id for w in heartbeats.offline(store, slot, reason=reason)}
    else:
        spec = NewWorker(
            name=slot,
            hostname=_host(request),
            version=_text(metadata, "workerVersion", MAX_VERSION_CHARS) or "",
        )
        ids = {heartbeats.beat(store, _owned(token, spec)).id}
    mine = {
        key: beat
        for key, beat in heartbeats.slots(store).items()
        if beat["metadata"]["workerId"] in ids
    }
    return answer({"workers": mine})


def slot_spec(request: Request, token: ApiToken) -> NewWorker:
    """The worker a worker token's slot registers on its first call: the token's name, on
    the host it calls from, in the token's queues, marked as the token's own."""
    return _owned(token, NewWorker(name=token.name, hostname=_host(request)))


def _owned(token: ApiToken, spec: NewWorker) -> NewWorker:
    """`spec` as `token` may register it (a worker token's: its queues, its mark)."""
    return own_worker_spec(token, spec) if token.role is Role.WORKER else spec


def _host(request: Request) -> str:
    """The host a slot calls from: its client's address (a slot runs wherever its loop does)."""
    return request.client.host if request.client is not None else UNKNOWN_HOST


def _text(metadata: dict[str, Any], name: str, limit: int) -> str | None:
    """The metadata's text `name`, or None; InvalidInput when it is something else."""
    value = metadata.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > limit:
        raise InvalidInput(f"metadata.{name}", f"text of at most {limit} characters", quoted(value))
    return value


ROUTES = [
    Route("/api/heartbeats", list_heartbeats, methods=["GET"]),
    Route("/api/heartbeats", post_heartbeat, methods=["POST"]),
]
