"""POST /api/store/NAME: a store operation run here for a remote store (store/remote/).

NAME is `repository.method` (`tasks.cancel`; `now` and `schema_version` on the store
itself), one of the operations declared `@served` (store/operations.py).

The body holds the operation's arguments by name, decoded by the types it declares
(store/remote/wire.py: a record is built by its own validating constructor, a wrong shape
is a 422 naming its path); the answer is `{"result": ...}`, or the operation's error with
its class as `type`. The operation is the same call a local store makes: one transaction,
its compare-and-set and its errors. Nothing here decides state; this module only says who
may call what:

- the token's role must reach the operation's (its `@served` declaration: the registry
  of operations, as server/roles.py is of routes; an admin's reaches every one);
- a worker token acts only for the workers it registered, their runs and their claims,
  and only in its queues (ownership.py): a worker's queues, a claim's ask and a task
  claimed by id must be among them.

An exchange that asks for work and finds none may wait (`wait_s`, at most MAX_WAIT_S) for
the signal that work is ready, claiming again each time it moves (long_poll.py): the long
poll of a remote runner. Its answer then says `waited`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.foundation.errors import InvalidInput, NotFound
from corral.model.api_tokens import Role
from corral.model.exchange import Exchanged
from corral.server.answers import answer
from corral.server.auth import admitted, require_role
from corral.server.bodies import json_object
from corral.server.context import store_of
from corral.server.long_poll import MAX_WAIT_S, again, signal_of
from corral.server.ownership import scoped
from corral.store import Store
from corral.store.operations import Operation, operations
from corral.store.remote import wire

MAX_BODY_BYTES = 4 << 20  # reports carry results; a task, its payload
_LOCAL_ONLY = frozenset({"open_run"})  # a callable of the runner's, run on its side


async def call(request: Request) -> Response:
    """Run the store operation the path names, for the request's token."""
    name = request.path_params["name"]
    operation = operations().get(name)
    if operation is None:
        await admitted(request)  # the caller first: no name is answered to a stranger
        raise NotFound("store operation", name)
    body = await json_object(request, MAX_BODY_BYTES)
    wait_s = _wait(body.pop("wait_s", 0.0), operation)
    store = store_of(request)
    signal = signal_of(request)
    seen = signal.generation
    result, args = await run_in_threadpool(_admitted_call, request, store, operation, body)
    if _may_free_work(operation, args):
        signal.notify()
    if wait_s and _found_nothing(result, args):
        result = await _long_poll(
            request, _bound(store, operation), args, first=result, seen=seen, wait_s=wait_s
        )
    return answer({"result": wire.encode(result, _types(operation)["return"])})


ROUTES = [Route("/api/store/{name}", call, methods=["POST"])]


def _admitted_call(
    request: Request, store: Store, operation: Operation, body: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """The request's token checked, its arguments decoded and held to what the token owns,
    and the operation run: its result and the arguments it ran with. One trip to a worker
    thread for all of it (each trip costs the event loop more than a short read does)."""
    token = require_role(request, store, Role(operation.served.role))
    args = _arguments(operation, body, _types(operation))
    if token.role == Role.WORKER and operation.served.role == Role.WORKER:
        args = scoped(store, token, operation, args)
    return _bound(store, operation)(**args), args


def _bound(store: Store, operation: Operation) -> Callable[..., Any]:
    """`operation` as a method of `store` (or of its repository)."""
    owner = getattr(store, operation.repository) if operation.repository else store
    bound: Callable[..., Any] = getattr(owner, operation.method)
    return bound


def _wait(value: Any, operation: Operation) -> float:
    if value == 0.0:
        return 0.0
    if not operation.served.long_poll:
        raise InvalidInput("wait_s", "nothing: only an exchange waits for work")
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= MAX_WAIT_S
    ):
        raise InvalidInput("wait_s", f"seconds from 0 to {MAX_WAIT_S:g}", value)
    return float(value)


@functools.cache
def _types(operation: Operation) -> dict[str, Any]:
    return wire.hints(operation.function)


@functools.cache
def _parameters(operation: Operation) -> dict[str, inspect.Parameter]:
    signature = inspect.signature(operation.function)
    return {k: p for k, p in list(signature.parameters.items())[1:] if k not in _LOCAL_ONLY}


def _arguments(operation: Operation, body: dict[str, Any], types: dict[str, Any]) -> dict[str, Any]:
    """The body's arguments, each decoded by its declared type; every required one given."""
    parameters = _parameters(operation)
    for key in body:
        if key not in parameters:
            name = operation.method
            raise InvalidInput(
                key, f"one of the arguments of {name}: " + ", ".join(parameters) or "none"
            )
    args = {key: wire.decode(value, types[key], key) for key, value in body.items()}
    for key, parameter in parameters.items():
        if key not in args and parameter.default is inspect.Parameter.empty:
            raise InvalidInput(key, "a value: the argument is required")
    return args


def _may_free_work(operation: Operation, args: dict[str, Any]) -> bool:
    """Whether `operation` may have made a task claimable: the waiting claims are woken
    only then (its `frees_work`; an exchange only when it reported something)."""
    if operation.served.long_poll:
        return bool(args.get("reports"))
    return operation.served.frees_work


def _found_nothing(result: Exchanged, args: dict[str, Any]) -> bool:
    ask = args.get("ask")
    return (
        ask is not None
        and ask.task_id is None
        and args.get("worker_id") is not None
        and not result.held
        and not result.claims
        and result.refused is None
        and result.full is None
    )


async def _long_poll(
    request: Request,
    exchange: Callable[..., Exchanged],
    args: dict[str, Any],
    *,
    first: Exchanged,
    seen: int,
    wait_s: float,
) -> Exchanged:
    """Claim again each time work may be ready, until something is held or the wait ends;
    the first exchange's reports stand."""
    ask_only = {"worker_id": args["worker_id"], "ask": args["ask"]}

    def attempt() -> Exchanged | None:
        tried: Exchanged = exchange(**ask_only)
        return None if _found_nothing(tried, ask_only) else tried

    found = await again(request, attempt, seen=seen, wait_s=wait_s)
    if found is None:
        return first._replace(waited=True)
    return first._replace(
        held=found.held, claims=found.claims, refused=found.refused, full=found.full
    )
