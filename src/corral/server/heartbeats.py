"""Seed 001's heartbeat route: every slot's heartbeat, read from the store at each call.

GET /api/heartbeats   viewer   {"workers": {"slot-1": {...}, ...}}, the seed's file as it is

corral.heartbeats is the use case; model/heartbeats.py maps corral's workers onto the
seed's schema (slot, status idle/working/offline, task, taskTitle, sessionId, lastUpdate,
startedAt, metadata with workerPid, workerVersion, restartCount).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral import heartbeats
from corral.model.tokens import Role
from corral.server.answers import answer
from corral.server.auth import require
from corral.server.context import store_of


def list_heartbeats(request: Request) -> Response:
    """The heartbeat of each slot, keyed by slot as the seed's file is."""
    store = store_of(request)
    require(request, store, Role.VIEWER)
    return answer({"workers": heartbeats.slots(store)})


ROUTES = [Route("/api/heartbeats", list_heartbeats, methods=["GET"])]
