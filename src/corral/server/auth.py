"""Who is asking: the bearer token of a request, and whether its role allows the route.

Each route's least role is written once, in roles.py; a route that names one needs a
token (`Authorization: Bearer corral_...`). A token that is unknown, wrong, revoked or
expired is one answer, 401; a token whose role is below the route's is 403, naming the
role needed. Roles rank viewer < worker < operator < admin; a worker token's queues
narrow what it may touch (the routes check them). A token belongs to one namespace: a
request naming another (X-Corral-Namespace; none names `default`) is 403, naming both,
so every route acts in the token's namespace (context.store_of). Only an admin token
acts in the namespace the request names, whichever it is: the one role that crosses
namespaces, and it does so only where a request says so. A token that checked out is
trusted for `auth_cache_s` without a store read (api_token_cache.py).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from corral.model.api_tokens import ApiToken, Role
from corral.server.api_token_cache import TokenCache
from corral.server.context import namespace_of, store_of
from corral.server.roles import declared
from corral.store import Store
from corral.usecases.api_tokens import authenticate

RANK = {Role.VIEWER: 0, Role.WORKER: 1, Role.OPERATOR: 2, Role.ADMIN: 3}


class Denied(Exception):
    """The request may not do this: its HTTP status and one line saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def require(request: Request, store: Store) -> ApiToken:
    """The request's token, if its role reaches the one roles.py declares for its route;
    else Denied (401 or 403)."""
    role = declared(request)
    assert role is not None, "a route that needs no token asks for none"
    return require_role(request, store, role)


def require_role(request: Request, store: Store, role: Role) -> ApiToken:
    """The request's token, if its role is `role` or above and it may act in the namespace
    the request names; else Denied (401 or 403). For a role the route's own declaration
    does not hold (a store operation's `@served`); routes call `require`."""
    header = request.headers.get("authorization", "")
    scheme, _, presented = header.partition(" ")
    token = None
    if scheme.lower() == "bearer":
        cache: TokenCache = request.app.state.token_cache
        token = cache.token(presented.strip(), lambda text: authenticate(store, text))
    if token is None:
        raise Denied(401, "a valid token is needed: Authorization: Bearer corral_...")
    if RANK[token.role] < RANK[role]:
        raise Denied(
            403, f"this needs {role.article} token; {token.name!r} is {token.role.article} token"
        )
    asked = namespace_of(request)
    if asked != token.namespace and token.role is not Role.ADMIN:
        raise Denied(
            403,
            f"namespace {asked!r} was asked for, but token {token.name!r} belongs to "
            f"namespace {token.namespace!r}: set CORRAL_NAMESPACE={token.namespace}",
        )
    return token


def within_queues(token: ApiToken, queue: str) -> None:
    """Denied (403) unless `token` may touch tasks of `queue`: a worker token that names
    queues touches only theirs; other tokens touch every queue."""
    if token.role is Role.WORKER and token.queues and queue not in token.queues:
        allowed = ", ".join(token.queues)
        raise Denied(403, f"token {token.name!r} may touch queues {allowed} only, not {queue!r}")


async def admitted(request: Request) -> tuple[Store, ApiToken]:
    """The server's store and the request's token, if its role reaches its route's:
    `require` on a worker thread (it reads the store), before a route reads the body."""
    store = store_of(request)
    token = await run_in_threadpool(require, request, store)
    return store, token
