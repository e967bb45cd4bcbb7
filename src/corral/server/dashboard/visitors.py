"""Who is looking at the dashboard: the token of the session cookie, or the loopback.

A browser cannot send `Authorization` on a link or an EventSource, so the dashboard's
login form takes a token, opens a session with it (corral/usecases/sign_ins.py) and
keeps the session's id and secret in a cookie (HttpOnly: no script reads it;
SameSite=Strict: no other site's page sends it; Secure over HTTPS). Every request checks
the session and its token again (`session_token`), so signing out, or a revoked or
expired token, ends the session at once. As long as no token exists the server listens
on loopback only (serve_cmds.py), and a request from the loopback that names a Host
host_guard.py knows is let in as an operator without one, as `corral` on the same host
would be. A signed-in visitor sees the token's namespace; the loopback without a token
sees `default`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from starlette.requests import Request

from corral.model.api_tokens import ApiToken, Role
from corral.server.auth import RANK
from corral.server.context import store_of
from corral.usecases.sign_ins import session_token

SESSION_COOKIE = "corral_session"
LOOPBACK_NAME = "loopback"


@dataclass(frozen=True, slots=True, kw_only=True)
class Visitor:
    """Who asks, as the dashboard knows them: a token, or the loopback (no token exists)."""

    token: ApiToken | None

    @property
    def name(self) -> str:
        """The token's name, or `loopback`."""
        return LOOPBACK_NAME if self.token is None else self.token.name

    @property
    def role(self) -> Role:
        """The token's role; the loopback is an operator, as `corral` on this host is."""
        return Role.OPERATOR if self.token is None else self.token.role

    @property
    def may_write(self) -> bool:
        """Whether the pages show this visitor write controls (an operator's)."""
        return RANK[self.role] >= RANK[Role.OPERATOR]


class LoginNeeded(Exception):
    """The request has no usable session: the browser is sent to the login form."""


class NotAllowed(Exception):
    """The visitor's role is below what the request needs (403)."""


def visitor_of(request: Request, role: Role | None = Role.VIEWER) -> Visitor:
    """The visitor of `request` if their role is `role` or above; LoginNeeded when there
    is no usable session, NotAllowed when the role is too low. Reads the store."""
    found = _visitor(request)
    if found is None:
        raise LoginNeeded
    allowed(found, role)
    return found


def allowed(visitor: Visitor, role: Role | None) -> None:
    """NotAllowed unless `visitor`'s role is `role` or above (None: any visitor)."""
    if role is not None and RANK[visitor.role] < RANK[role]:
        raise NotAllowed(
            f"this needs {role.article} token; {visitor.name!r} is {visitor.role.article} token"
        )


def _visitor(request: Request) -> Visitor | None:
    store = store_of(request)
    presented = request.cookies.get(SESSION_COOKIE, "")
    token = session_token(store, presented) if presented else None
    if token is not None:
        # A browser names no namespace: the dashboard shows the token's (context.store_of).
        request.state.namespace = token.namespace
        return Visitor(token=token)
    local = _from_loopback(request) and not _foreign_host(request)
    if local and not store.api_tokens.any_usable_token():
        return Visitor(token=None)
    return None


def _foreign_host(request: Request) -> bool:
    """Whether the request named a Host other than the loopback's (host_guard.py let it
    through because a token existed a moment ago): never the loopback's operator."""
    return bool(getattr(request.state, "foreign_host", False))


def _from_loopback(request: Request) -> bool:
    client = request.client
    if client is None:
        return False
    try:
        return ipaddress.ip_address(client.host).is_loopback
    except ValueError:
        return False
