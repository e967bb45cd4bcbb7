"""The two shapes of a dashboard route, with the checks every one of them makes.

    page(view)    GET: the visitor (any role; none: the login form), then `view` renders
    write(action) POST: the visitor, the CSRF token and origin (csrf.py), an operator's
                  role, then `action` calls its use case and redirects (303) back
    routes(...)   a page and its writes, as a module's ROUTES

The role each route needs is the one server/roles.py declares for it (a page a viewer's,
a write an operator's).

A write is refused (403) before its use case runs, whatever the page showed, so a viewer
who forges a form changes nothing. A use case's refusal (a task that is not failed, a
merge that conflicts) is shown on an error page with its status and its one line.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from corral.foundation.errors import CorralError
from corral.server.auth import Denied
from corral.server.dashboard import csrf
from corral.server.dashboard.forms import Form, read_form
from corral.server.dashboard.pages import SECURITY_HEADERS, login_url, render_bare
from corral.server.dashboard.visitors import (
    LoginNeeded,
    NotAllowed,
    Visitor,
    allowed,
    visitor_of,
)
from corral.server.roles import declared

View = Callable[[Request, Visitor], Response]
Action = Callable[[Request, Visitor, Form], Response]
Endpoint = Callable[[Request], Awaitable[Response]]


def page(view: View) -> Endpoint:
    """A GET route that renders `view` for any signed-in visitor."""

    async def endpoint(request: Request) -> Response:
        try:
            visitor = await run_in_threadpool(visitor_of, request, declared(request))
            response: Response = await run_in_threadpool(view, request, visitor)
        except LoginNeeded:
            return RedirectResponse(login_url(request), 303, headers=SECURITY_HEADERS)
        except Exception as exc:
            return _refusal(request, exc)
        return response

    return endpoint


def write(action: Action) -> Endpoint:
    """A POST route that runs `action` for an operator whose form is this dashboard's."""

    async def endpoint(request: Request) -> Response:
        try:
            form = await read_form(request)
            visitor = await run_in_threadpool(visitor_of, request)
            csrf.check(request, form)
            allowed(visitor, declared(request))
            response: Response = await run_in_threadpool(action, request, visitor, form)
        except LoginNeeded:
            return render_bare(request, "error.html", 401, message="sign in first")
        except Exception as exc:
            return _refusal(request, exc)
        return response

    return endpoint


def routes(path: str, view: View, actions: dict[str, Action]) -> list[BaseRoute]:
    """The page `view` at `path` (GET) and each write of `actions` at its own path (POST)."""
    return [
        Route(path, page(view), methods=["GET"]),
        *(Route(where, write(action), methods=["POST"]) for where, action in actions.items()),
    ]


def _refusal(request: Request, exc: Exception) -> Response:
    """The error page of a refusal; anything else is a bug, re-raised for the app's 500."""
    if isinstance(exc, NotAllowed):
        return render_bare(request, "error.html", 403, message=str(exc))
    if isinstance(exc, Denied):
        return render_bare(request, "error.html", exc.status, message=exc.message)
    if isinstance(exc, CorralError):
        return render_bare(request, "error.html", exc.http_status, message=exc.message)
    raise exc
