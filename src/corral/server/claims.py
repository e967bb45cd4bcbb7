"""Claim routes: a worker written in any language claims by long poll and reports under
the claim's fencing token (seed 002).

POST /api/workers/{worker_id}/claim   worker   the next task it may run: 200 {"task",
                                               "token", "lease_expires_at", ...}, or 204
POST /api/tasks/{task_id}/complete    worker   {token, result?}        the task
POST /api/tasks/{task_id}/fail        worker   {token, error}          the task
POST /api/tasks/{task_id}/defer       worker   {token, delay_s, reason?}   the task
POST /api/tasks/{task_id}/release     worker   {token, reason?, attempt?}  the task
POST /api/tasks/{task_id}/renew       worker   {token, lease_s?}       the claim

A claim that finds nothing waits up to `wait_s` (default and most 30 s) for work, woken by
the work signal (long_poll.py), then answers 204. Kinds and queues narrow the worker's own
in the claim's query, so a worker is never handed a task it cannot run. Each report calls
one use case of corral.usecases.claims, fenced by the token: a token whose claim has ended is 409
and nothing changes. A worker token claims only for its own workers, in its queues, and
reports only under their claims (ownership.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.foundation.durations import iso
from corral.foundation.settings import Settings
from corral.model.api_tokens import Role
from corral.model.exchange import ClaimAsk, Held
from corral.server.answers import answer
from corral.server.auth import admitted
from corral.server.bodies import json_object, record
from corral.server.context import settings_of
from corral.server.long_poll import again, signal_of
from corral.server.ownership import acting_under, own_exchange
from corral.server.paths import path_id
from corral.server.worker_bodies import (
    Ask,
    Completion,
    Deferral,
    Failure,
    Fenced,
    Release,
    Renewal,
)
from corral.store import Store
from corral.usecases import claims

F = TypeVar("F", bound=Fenced)


async def claim(request: Request) -> Response:
    """The next task the worker may run, held under a new claim; 204 after `wait_s`."""
    store, token = await admitted(request)
    worker_id = path_id(request, "worker_id", "worker")
    ask = record(await json_object(request, empty=True), Ask)
    wanted: ClaimAsk | None = ClaimAsk(
        limit=1, kinds=ask.kinds, queues=ask.queues, lease_s=ask.lease_s
    )
    if token.role == Role.WORKER:  # the same scoping as a runner's exchange
        _, wanted = await run_in_threadpool(own_exchange, store, token, worker_id, (), wanted)
    assert wanted is not None
    settings = settings_of(request)

    def attempt() -> Held | None:
        assert wanted is not None
        return claims.hold_next(store, worker_id, wanted, settings=settings)

    seen = signal_of(request).generation  # before the first try: no wake-up is missed
    held = await run_in_threadpool(attempt)
    if held is None and ask.wait_s > 0:
        held = await again(request, attempt, seen=seen, wait_s=ask.wait_s)
    if held is None:
        return Response(status_code=204)
    return answer(_held(held))


def _held(held: Held) -> dict[str, Any]:
    return {
        "task": held.task.to_dict(),
        "token": held.token,
        "claimed_at": iso(held.claimed_at),
        "lease_expires_at": iso(held.lease_expires_at),
        "deadline_at": iso(held.deadline_at),
    }


# ---- reports under a claim's token ------------------------------------------------------

Apply = Callable[[Store, str, Any, Settings], Any]


def _complete(store: Store, task_id: str, body: Completion, settings: Settings) -> Any:
    return claims.complete(store, task_id, token=body.token, result=body.result)


def _fail(store: Store, task_id: str, body: Failure, settings: Settings) -> Any:
    return claims.fail(store, task_id, error=body.error, token=body.token, settings=settings)


def _defer(store: Store, task_id: str, body: Deferral, settings: Settings) -> Any:
    return claims.defer(store, task_id, until=body.delay_s, token=body.token, reason=body.reason)


def _release(store: Store, task_id: str, body: Release, settings: Settings) -> Any:
    return claims.release(
        store,
        task_id,
        token=body.token,
        reason=body.reason,
        attempt=body.attempt,
        settings=settings,
    )


def _renew(store: Store, task_id: str, body: Renewal, settings: Settings) -> Any:
    return claims.renew(store, task_id, token=body.token, lease_s=body.lease_s, settings=settings)


def _report(action: str, shape: type[F], apply: Apply, *, wakes: bool) -> Route:
    """The route of one report: its body read as `shape`, `apply` (one use case) called
    under the body's token; the record it answers, as JSON. With `wakes`, the report may
    have made work ready (the task, or tasks that waited on it): waiting claims look again."""

    async def report(request: Request) -> Response:
        store, token = await admitted(request)
        task_id = path_id(request, "task_id", "task")
        body = record(await json_object(request), shape)
        settings = settings_of(request)

        def run() -> Any:
            acting_under(store, token, body.token)
            return apply(store, task_id, body, settings)

        done = await run_in_threadpool(run)
        if wakes:
            signal_of(request).notify()
        return answer(done.to_dict())

    report.__name__ = report.__qualname__ = action
    return Route(f"/api/tasks/{{task_id}}/{action}", report, methods=["POST"])


ROUTES = [
    Route("/api/workers/{worker_id}/claim", claim, methods=["POST"]),
    _report("complete", Completion, _complete, wakes=True),
    _report("fail", Failure, _fail, wakes=True),
    _report("defer", Deferral, _defer, wakes=True),
    _report("release", Release, _release, wakes=True),
    _report("renew", Renewal, _renew, wakes=False),
]
