"""Signing in and out: a token typed into a form, kept in an HttpOnly cookie.

GET  /login?next=PATH   the form
POST /login             token, next: the token is checked and a session opened with it
                        (corral/usecases/sign_ins.py), kept in the session cookie
                        (HttpOnly, SameSite=Strict, Secure over HTTPS); a wrong one shows
                        the form again, 401
POST /logout            the session is ended in the store and the cookie cleared: a copy
                        of the cookie signs nobody in any more
"""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.server.auth import Denied
from corral.server.context import store_of
from corral.server.dashboard import csrf
from corral.server.dashboard.forms import Form, one, read_form
from corral.server.dashboard.pages import redirect, render_bare
from corral.server.dashboard.visitors import SESSION_COOKIE
from corral.usecases.sign_ins import sign_in as open_session
from corral.usecases.sign_ins import sign_out as end_session

SESSION_MAX_AGE_S = 12 * 3600  # the browser forgets the token after a working day


def login_form(request: Request) -> Response:
    """The sign-in form."""
    return render_bare(
        request, "login.html", next=request.query_params.get("next", "/"), failed=False
    )


async def sign_in(request: Request) -> Response:
    """Open a session with a valid token, keep it in the session cookie and go on to
    `next`."""
    form = await _checked_form(request)
    if not isinstance(form, dict):
        return form
    presented = one(form, "token").strip()
    opened = await run_in_threadpool(
        lambda: open_session(store_of(request), presented, max_age_s=SESSION_MAX_AGE_S)
    )
    if opened is None:
        return render_bare(request, "login.html", 401, next=one(form, "next", "/"), failed=True)
    response = redirect(request, one(form, "next", "/"))
    response.set_cookie(
        SESSION_COOKIE,
        opened[1],
        max_age=SESSION_MAX_AGE_S,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


async def sign_out(request: Request) -> Response:
    """End the session (the token it was opened with stays valid: `corral token
    revoke`) and clear its cookie."""
    form = await _checked_form(request)
    if not isinstance(form, dict):
        return form
    cookie = request.cookies.get(SESSION_COOKIE, "")
    if cookie:
        await run_in_threadpool(end_session, store_of(request), cookie)
    response = redirect(request, "/login")
    response.delete_cookie(SESSION_COOKIE, samesite="strict", httponly=True)
    return response


async def _checked_form(request: Request) -> Form | Response:
    """The request's form if its origin and CSRF token hold (no session is needed to sign
    in or out); else the error page."""
    form = await read_form(request)
    try:
        csrf.check(request, form)
    except Denied as exc:
        return render_bare(request, "error.html", exc.status, message=exc.message)
    return form


ROUTES = [
    Route("/login", login_form, methods=["GET"]),
    Route("/login", sign_in, methods=["POST"]),
    Route("/logout", sign_out, methods=["POST"]),
]
