"""The Starlette application of `corral serve`: its routes, and errors as answers.

Routes call the use cases (one each) on the store the server was started on, as the CLI
does; nothing here decides state. Every route but `/healthz` needs a token (auth.py).
"""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.errors import CorralError
from corral.server import events, metrics, tasks
from corral.server.answers import answer, error, of_error
from corral.server.auth import Denied
from corral.server.wakeups import EventWakeups
from corral.settings import Settings
from corral.store import Store


def create_app(store: Store, settings: Settings) -> Starlette:
    """The API over `store`, with `settings` for the use cases that take them."""
    app = Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            *tasks.ROUTES,
            *events.ROUTES,
            *metrics.ROUTES,
        ],
        exception_handlers={
            CorralError: _corral_error,
            Denied: _denied,
            HTTPException: _http_error,
        },
    )
    app.state.store = store
    app.state.settings = settings
    app.state.tallies = metrics.LogTallies()  # the sums /metrics keeps of the event log
    app.state.wakeups = EventWakeups(store)  # one source of wake-ups for every SSE stream
    return app


def healthz(request: Request) -> Response:
    """Alive, and the store answers (503 otherwise); needs no token."""
    request.app.state.store.now()
    return answer({"ok": True})


async def _corral_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, CorralError)
    return of_error(exc)


async def _denied(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Denied)
    return error(exc.status, exc.message)


async def _http_error(request: Request, exc: Exception) -> Response:
    """404 for an unknown route, 405 for a wrong method: the same JSON shape."""
    assert isinstance(exc, HTTPException)
    return error(exc.status_code, str(exc.detail))
