"""Worker routes: the registry as a worker written in any language uses it (seed 002).

POST   /api/workers                        worker  201 {"worker", "heartbeat_interval_s"}
GET    /api/workers?status=S&queue=Q       viewer  the workers, oldest first
GET    /api/workers/{worker_id}            viewer  one worker
POST   /api/workers/{worker_id}/heartbeat  worker  {"status", "drain", "heartbeat_interval_s"}
POST   /api/workers/{worker_id}/drain      worker  the worker, draining
DELETE /api/workers/{worker_id}            worker  the worker, offline

Each calls one use case of corral.usecases.workers; a worker is as `corral worker list --json`
shows it. A worker token registers workers as its own and acts only for them
(ownership.py); an operator's token acts for any. A heartbeat of a worker the server
declared dead, or one taken offline, is refused (409, its `details.status` saying which):
the worker stops, and registers again if it means to go on.
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.foundation.errors import InvalidInput
from corral.model.actors import OPERATOR
from corral.model.api_tokens import Role
from corral.model.labels import parse_labels
from corral.model.paging import parse_cursor
from corral.model.states import WorkerStatus
from corral.model.tasks import check_name
from corral.model.workers import BeatFigures, Worker, WorkerFilter
from corral.server import params
from corral.server.answers import answer
from corral.server.auth import admitted
from corral.server.bodies import json_object, record
from corral.server.context import settings_of
from corral.server.long_poll import signal_of
from corral.server.ownership import acting_for, own_worker_spec
from corral.server.paths import path_id
from corral.server.worker_bodies import Registration
from corral.usecases import workers


async def register(request: Request) -> Response:
    """Register a worker; 201 with it and the heartbeat interval to keep."""
    store, token = await admitted(request)
    spec = record(await json_object(request), Registration).spec()
    if token.role == Role.WORKER:
        spec = own_worker_spec(token, spec)
    settings = settings_of(request)
    beat = await run_in_threadpool(lambda: workers.register(store, spec, settings=settings))
    body = {"worker": beat.worker.to_dict(), "heartbeat_interval_s": beat.heartbeat_interval_s}
    return answer(body, 201)


async def list_workers(request: Request) -> Response:
    """The workers in any of the `status`es asked (repeatable), serving `queue`, running
    `kind`, on `host`, with every `label` K=V (repeatable), if named; a page of `limit`
    after the cursor `after`. With `paged`: {"items", "next", "total"} (`total` with
    `count`), seed 002's ListWorkers; else the array of the page."""
    store, _ = await admitted(request)
    q = request.query_params
    for name in ("queue", "kind"):
        if q.get(name) is not None:
            check_name(name, q[name])
    after = q.get("after")
    flt = WorkerFilter(
        statuses=tuple(_status(s) for s in q.getlist("status")),
        queue=q.get("queue"),
        kind=q.get("kind"),
        host=q.get("host"),
        labels=parse_labels("label", q.getlist("label")),
        after_seq=None if after is None else parse_cursor(workers.WORKER_LISTING, after, 1)[0],
        limit=None if q.get("limit") is None else params.limit(q["limit"]),
    )
    found = await run_in_threadpool(lambda: workers.page(store, flt, count="count" in q))
    if "paged" in q:
        return answer(found.to_dict())
    return answer([w.to_dict() for w in found.items])


async def get_worker(request: Request) -> Response:
    """One worker."""
    store, _ = await admitted(request)
    worker_id = path_id(request, "worker_id", "worker")
    worker: Worker = await run_in_threadpool(store.workers.get_worker, worker_id)
    return answer(worker.to_dict())


async def heartbeat(request: Request) -> Response:
    """The worker lives (its leases extended); answers the interval and whether to drain."""
    store, token = await admitted(request)
    worker_id = path_id(request, "worker_id", "worker")
    figures = record(await json_object(request, empty=True), BeatFigures)
    settings = settings_of(request)

    def beat() -> workers.Beat:
        acting_for(store, token, worker_id)
        return workers.heartbeat(
            store,
            worker_id,
            figures=figures,
            settings=settings,
        )

    done = await run_in_threadpool(beat)
    return answer(done.to_dict())


async def drain(request: Request) -> Response:
    """Take no new claims, finish what it holds: asked by an operator, or by the worker
    itself on its way out (seed 002's deregister with drain)."""
    store, token = await admitted(request)
    worker_id = path_id(request, "worker_id", "worker")
    actor = worker_id if token.role == Role.WORKER else OPERATOR

    def drained() -> Worker:
        acting_for(store, token, worker_id)
        return workers.drain(store, worker_id, actor=actor)

    worker = await run_in_threadpool(drained)
    signal_of(request).notify()  # its claims waiting for work look again, and are refused
    return answer(worker.to_dict())


async def deregister(request: Request) -> Response:
    """Take the worker offline; its unfinished tasks go back to the queue, uncounted."""
    store, token = await admitted(request)
    worker_id = path_id(request, "worker_id", "worker")

    def gone() -> Worker:
        acting_for(store, token, worker_id)
        return workers.deregister(store, worker_id)

    worker = await run_in_threadpool(gone)
    signal_of(request).notify()  # its tasks are ready again: wake the claims waiting
    return answer(worker.to_dict())


ROUTES = [
    Route("/api/workers", register, methods=["POST"]),
    Route("/api/workers", list_workers, methods=["GET"]),
    Route("/api/workers/{worker_id}", get_worker, methods=["GET"]),
    Route("/api/workers/{worker_id}", deregister, methods=["DELETE"]),
    Route("/api/workers/{worker_id}/heartbeat", heartbeat, methods=["POST"]),
    Route("/api/workers/{worker_id}/drain", drain, methods=["POST"]),
]


def _status(raw: str) -> WorkerStatus:
    try:
        return WorkerStatus(raw)
    except ValueError:
        raise InvalidInput("status", "one of " + ", ".join(WorkerStatus), raw) from None
