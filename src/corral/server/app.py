"""The Starlette application of `corral serve`: its routes, and errors as answers.

Routes call the use cases (one each) on the store the server was started on, as the CLI
does; nothing here decides state. Every route but `/healthz` needs a token (auth.py);
every request first passes the Host and cross-site checks of host_guard.py.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.board import routes as board
from corral.foundation import filemodes
from corral.foundation.errors import CorralError
from corral.foundation.settings import Settings
from corral.server import (
    claims,
    dashboard,
    events,
    metrics,
    openapi,
    run_output,
    store_calls,
    tasks,
    workers,
)
from corral.server.answers import answer, error, of_error
from corral.server.api_token_cache import TokenCache
from corral.server.auth import Denied
from corral.server.host_guard import HostGuard
from corral.server.mcp_mount import McpMount
from corral.server.wakeups import EventWakeups
from corral.server.work_signal import WorkSignal
from corral.store import Store


def create_app(store: Store, settings: Settings) -> Starlette:
    """The API over `store`, with `settings` for the use cases that take them."""
    mcp = McpMount()
    app = Starlette(
        routes=[
            Route("/healthz", healthz, methods=["GET"]),
            # First: every call of a remote store and runner; Starlette tries routes in order.
            *store_calls.ROUTES,
            *tasks.ROUTES,
            *board.ROUTES,
            *events.ROUTES,
            *workers.ROUTES,
            *claims.ROUTES,
            *metrics.ROUTES,
            *run_output.ROUTES,
            *openapi.ROUTES,
            *dashboard.ROUTES,
            # MCP over streamable HTTP; the SDK is imported by its first request.
            Route("/mcp", mcp, methods=["GET", "POST", "DELETE"]),
        ],
        lifespan=_lifespan,
        middleware=[_host_guard(store, settings)],
        exception_handlers={
            CorralError: _corral_error,
            Denied: _denied,
            HTTPException: _http_error,
            Exception: _internal_error,
        },
    )
    app.state.store = store
    app.state.settings = settings
    app.state.token_cache = TokenCache(settings.auth_cache_s)
    app.state.work_signal = WorkSignal()
    app.state.tallies = metrics.LogTallies()  # the sums /metrics keeps of the event log
    app.state.wakeups = EventWakeups(store)  # one source of wake-ups for every SSE stream
    app.state.task_figures = dashboard.overview.TaskFiguresByNamespace(store, settings)
    app.state.mcp = mcp
    return app


def _host_guard(store: Store, settings: Settings) -> Middleware:
    """The checks of Host and of cross-site writes every request passes first."""
    return Middleware(
        HostGuard,
        tokens_exist=store.api_tokens.any_usable_token,
        allowed_hosts=settings.allowed_hosts,
        trust_s=settings.auth_cache_s,
    )


def from_environment() -> Starlette:
    """The app of one process of `corral serve --workers N`, each opening the store on its
    own: `CORRAL_DB` names it and its settings are the ones beside it (as `serve` read)."""
    from corral.foundation.settings import load_settings  # noqa: PLC0415
    from corral.store import open_store  # noqa: PLC0415
    from corral.store.location import config_path  # noqa: PLC0415

    db = os.environ["CORRAL_DB"]
    settings = load_settings(config_path=config_path(db))
    filemodes.use(settings.store_mode)
    return create_app(open_store(db), settings)


@contextlib.asynccontextmanager
async def _lifespan(app: Starlette) -> AsyncIterator[None]:
    """Watch the store for ready work while serving, and hold the task group `/mcp` runs
    on; on the way out, wake every waiting claim so the server's shutdown is not held by
    long polls, and end MCP's requests."""
    signal: WorkSignal = app.state.work_signal
    mcp: McpMount = app.state.mcp
    signal.start(app.state.store)
    try:
        async with anyio.create_task_group() as tasks:
            mcp.bind(tasks)
            try:
                yield
            finally:
                mcp.stop()
    finally:
        signal.stop()


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


async def _internal_error(request: Request, exc: Exception) -> Response:
    """A bug, not the caller's doing: 500 in the API's JSON shape, without the details
    (the traceback goes to the server's log)."""
    return error(500, "corral serve failed on this request; its log says why")


async def _http_error(request: Request, exc: Exception) -> Response:
    """404 for an unknown route, 405 for a wrong method: the same JSON shape."""
    assert isinstance(exc, HTTPException)
    return error(exc.status_code, str(exc.detail))
