"""Who is asking: the bearer token of a request, and whether its role allows the route.

Every route but `/healthz` needs a token (`Authorization: Bearer corral_...`). A token
that is unknown, wrong, revoked or expired is one answer, 401; a token whose role is
below the route's is 403, naming the role needed. Roles rank viewer < worker <
operator; a worker token's queues narrow what it may touch (the routes check them). A
token belongs to one namespace: a request naming another (X-Corral-Namespace) is 403,
naming both, and every route acts in the token's namespace (context.store_of). A token
that checked out is trusted for `auth_cache_s` without a store read (token_cache.py).
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request

from corral.model.tokens import Role, Token
from corral.server.context import namespace_of, store_of
from corral.server.token_cache import TokenCache
from corral.store import Store
from corral.tokens import authenticate

RANK = {Role.VIEWER: 0, Role.WORKER: 1, Role.OPERATOR: 2}


class Denied(Exception):
    """The request may not do this: its HTTP status and one line saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def require(request: Request, store: Store, role: Role) -> Token:
    """The request's token, if its role is `role` or above; else Denied (401 or 403)."""
    header = request.headers.get("authorization", "")
    scheme, _, presented = header.partition(" ")
    token = None
    if scheme.lower() == "bearer":
        cache: TokenCache = request.app.state.token_cache
        token = cache.token(presented.strip(), lambda text: authenticate(store, text))
    if token is None:
        raise Denied(401, "a valid token is needed: Authorization: Bearer corral_...")
    if RANK[token.role] < RANK[role]:
        raise Denied(403, f"this needs a {role} token; {token.name!r} is a {token.role} token")
    asked = namespace_of(request)
    if asked != token.namespace:
        raise Denied(
            403,
            f"namespace {asked!r} was asked for, but token {token.name!r} belongs to "
            f"namespace {token.namespace!r}: set CORRAL_NAMESPACE={token.namespace}",
        )
    return token


def within_queues(token: Token, queue: str) -> None:
    """Denied (403) unless `token` may touch tasks of `queue`: a worker token that names
    queues touches only theirs; other tokens touch every queue."""
    if token.role is Role.WORKER and token.queues and queue not in token.queues:
        allowed = ", ".join(token.queues)
        raise Denied(403, f"token {token.name!r} may touch queues {allowed} only, not {queue!r}")


async def admitted(request: Request, role: Role) -> tuple[Store, Token]:
    """The server's store and the request's token, if its role is `role` or above: `require`
    on a worker thread (it reads the store), before a route reads the body."""
    store = store_of(request)
    token = await run_in_threadpool(require, request, store, role)
    return store, token
