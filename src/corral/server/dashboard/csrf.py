"""Cross-site request forgery: every write proves it comes from a dashboard page.

Three guards, each enough against a plain cross-site form:
- the session cookie is SameSite=Strict, so another site's page never sends it;
- a write's `Origin` must be this server's own origin, or, without an `Origin`, its
  `Sec-Fetch-Site` must be `same-origin` (browsers send both on every POST); a write with
  neither is refused (host_guard.py refuses another site's on every route, API too);
- a write carries the page's CSRF token (the hidden field `csrf`, or the header
  `X-CSRF-Token` htmx sends): an HMAC of the session cookie under a random secret kept
  in a cookie of its own, which no other site can read. The token is bound to the
  session, so a token seen under one login is worthless under another, and every
  process of a `serve --workers N` checks it alike (no server-side state).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

from starlette.requests import Request
from starlette.responses import Response

from corral.server.auth import Denied
from corral.server.dashboard.forms import Form, one
from corral.server.dashboard.visitors import SESSION_COOKIE
from corral.server.host_guard import own_origin

CSRF_COOKIE = "corral_csrf"
CSRF_FIELD = "csrf"
CSRF_HEADER = "x-csrf-token"


def secret_of(request: Request) -> str:
    """The request's CSRF secret: its cookie's, or a new one `remember` will set."""
    secret = getattr(request.state, "csrf_secret", None) or request.cookies.get(CSRF_COOKIE)
    if not secret:
        secret = secrets.token_urlsafe(32)
        request.state.csrf_new = True
    request.state.csrf_secret = secret
    return str(secret)


def token_of(request: Request) -> str:
    """The CSRF token the request's pages put in their forms."""
    return _token(secret_of(request), request.cookies.get(SESSION_COOKIE, ""))


def remember(request: Request, response: Response) -> None:
    """Set the CSRF secret's cookie on `response` when this request made a new one."""
    if getattr(request.state, "csrf_new", False):
        response.set_cookie(
            CSRF_COOKIE,
            request.state.csrf_secret,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )


def check(request: Request, form: Form) -> None:
    """Denied (403) unless the write comes from this server's pages with its token."""
    _same_origin(request)
    secret = request.cookies.get(CSRF_COOKIE, "")
    presented = request.headers.get(CSRF_HEADER) or one(form, CSRF_FIELD)
    expected = _token(secret, request.cookies.get(SESSION_COOKIE, ""))
    if not secret or not hmac.compare_digest(presented.encode(), expected.encode()):
        raise Denied(403, "this form is stale or not from this dashboard: reload the page")


def _token(secret: str, session: str) -> str:
    return hmac.new(secret.encode(), session.encode(), hashlib.sha256).hexdigest()


def _same_origin(request: Request) -> None:
    """Denied unless `Origin` names this server, or, without it, `Sec-Fetch-Site` says
    the write came from this origin."""
    origin = request.headers.get("origin")
    if origin is None:
        same = request.headers.get("sec-fetch-site") == "same-origin"
    else:
        same = origin == own_origin(request.scope, request.headers.get("host", ""))
    if not same:
        raise Denied(403, "a write must come from this dashboard's own pages (Origin)")
