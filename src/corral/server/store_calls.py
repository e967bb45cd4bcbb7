"""POST /api/store/NAME: a store operation run here for a remote store (store/remote/).

The body holds the operation's arguments by name, decoded by the types it declares
(store/remote/wire.py: a record is built by its own validating constructor, a wrong shape
is a 422 naming its path); the answer is `{"result": ...}`, or the operation's error with
its class as `type`. The operation is the same call a local store makes: one transaction,
its compare-and-set and its errors. Nothing here decides state; this module only says who
may call what:

- the token's role must reach the operation's (store/remote/methods.py);
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

from corral.errors import InvalidInput, NotFound
from corral.model.batches import ClaimAsk, Exchanged, Report
from corral.model.tokens import Role, Token
from corral.server.answers import answer
from corral.server.auth import Denied, require
from corral.server.bodies import json_object
from corral.server.context import store_of
from corral.server.long_poll import MAX_WAIT_S, again, signal_of
from corral.server.ownership import own_claim, own_worker, own_worker_spec, within
from corral.store import Store
from corral.store.remote import methods, wire

MAX_BODY_BYTES = 4 << 20  # reports carry results; a task, its payload
_LOCAL_ONLY = frozenset({"open_run"})  # a callable of the runner's, run on its side


async def call(request: Request) -> Response:
    """Run the store operation the path names, for the request's token."""
    name = request.path_params["name"]
    role = methods.role_for(name)
    if role is None:
        raise NotFound("store operation", name)
    body = await json_object(request, MAX_BODY_BYTES)
    wait_s = _wait(body.pop("wait_s", 0.0), name)
    store = store_of(request)
    signal = signal_of(request)
    seen = signal.generation
    result, args = await run_in_threadpool(_admitted_call, request, store, role, name, body)
    if _may_free_work(name, args):
        signal.notify()
    if name == "exchange" and wait_s and _found_nothing(result, args):
        operation = getattr(store, name)
        result = await _long_poll(request, operation, args, first=result, seen=seen, wait_s=wait_s)
    return answer({"result": wire.encode(result, _types(name)["return"])})


ROUTES = [Route("/api/store/{name}", call, methods=["POST"])]


def _admitted_call(
    request: Request, store: Store, role: Role, name: str, body: dict[str, Any]
) -> tuple[Any, dict[str, Any]]:
    """The request's token checked, its arguments decoded and held to what the token owns,
    and the operation run: its result and the arguments it ran with. One trip to a worker
    thread for all of it (each trip costs the event loop more than a short read does)."""
    token = require(request, store, role)
    args = _arguments(name, body, _types(name))
    if token.role == Role.WORKER and name in methods.WORKER_OWNS:
        args = _scoped(store, token, name, args)
    return getattr(store, name)(**args), args


def _wait(value: Any, name: str) -> float:
    if value == 0.0:
        return 0.0
    if name != "exchange":
        raise InvalidInput("wait_s", "nothing: only an exchange waits for work")
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 <= value <= MAX_WAIT_S
    ):
        raise InvalidInput("wait_s", f"seconds from 0 to {MAX_WAIT_S:g}", value)
    return float(value)


@functools.cache
def _types(name: str) -> dict[str, Any]:
    return wire.hints(getattr(Store, name))


@functools.cache
def _parameters(name: str) -> dict[str, inspect.Parameter]:
    signature = inspect.signature(getattr(Store, name))
    return {k: p for k, p in list(signature.parameters.items())[1:] if k not in _LOCAL_ONLY}


def _arguments(name: str, body: dict[str, Any], types: dict[str, Any]) -> dict[str, Any]:
    """The body's arguments, each decoded by its declared type; every required one given."""
    parameters = _parameters(name)
    for key in body:
        if key not in parameters:
            raise InvalidInput(
                key, f"one of the arguments of {name}: " + ", ".join(parameters) or "none"
            )
    args = {key: wire.decode(value, types[key], key) for key, value in body.items()}
    for key, parameter in parameters.items():
        if key not in args and parameter.default is inspect.Parameter.empty:
            raise InvalidInput(key, "a value: the argument is required")
    return args


def _may_free_work(name: str, args: dict[str, Any]) -> bool:
    """Whether operation `name` may have made a task claimable: the waiting claims are
    woken only then (methods.FREES_NO_WORK)."""
    if name == "exchange":
        return bool(args.get("reports"))
    return name not in methods.READS and name not in methods.FREES_NO_WORK


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


# ---- what a worker token may touch ------------------------------------------------------


def _scoped(store: Store, token: Token, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """`args`, held to what worker token `token` owns; Denied (403) where they reach past it."""
    if name == "register_worker":
        return {**args, "spec": own_worker_spec(token, args["spec"])}
    if name == "exchange":
        return {**args, **_own_exchange(store, token, args)}
    owned = methods.WORKER_OWNS[name]
    if owned == "worker_id":
        own_worker(store, token, args.get("worker_id"))
    elif owned == "run_id":
        run = store.get_run(args["run_id"])
        own_worker(store, token, run.worker_id)
    elif owned == "token":
        own_claim(store, token, args.get("token"))
    return args


def _own_exchange(store: Store, token: Token, args: dict[str, Any]) -> dict[str, Any]:
    """A runner's exchange (its worker's) or an agent's report (`corral done --token`, no
    worker): each report under a claim of one of the token's workers, which the store then
    checks as the report's holder; a claim only for its own worker, in its queues."""
    worker_id: str | None = args["worker_id"]
    ask: ClaimAsk | None = args.get("ask")
    if worker_id is not None or ask is not None:
        own_worker(store, token, worker_id)
    reports: list[Report] = []
    for report in args.get("reports", ()):
        holder = worker_id
        if holder is None and report.token is not None:
            claim = store.claim_by_token(report.token)
            holder = None if claim is None else claim.worker_id
            own_worker(store, token, holder)
        if report.token is None or holder is None or report.holder not in (None, holder):
            raise Denied(403, f"token {token.name!r} reports only its own workers' claims")
        reports.append(report._replace(holder=holder))
    if ask is None:
        return {"reports": reports}
    if ask.task_id is not None and token.queues:
        within(token, (store.get_task(ask.task_id).queue,))
    queues = ask.queues or token.queues
    within(token, queues)
    return {"reports": reports, "ask": ask._replace(queues=queues)}
