"""`/mcp`: the route that hands MCP requests to the SDK, which it imports on first use.

`corral serve` without MCP traffic never imports the SDK (the optional extra `corral[mcp]`):
the first request to `/mcp` whose bearer token reaches the route's role (roles.py) starts
the SDK's session manager on the server's lifespan task group, and every request after it
is handed to that manager (corral/mcp/http.py). A request without a valid token is
answered here, 401 or 403 in the API's JSON shape, before anything reaches the SDK; a
server without the extra answers 501, saying which extra to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from corral.server.answers import error
from corral.server.auth import Denied, require
from corral.server.context import store_of

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager


class McpMount:
    """The ASGI app of `/mcp`: authenticate, then the SDK's manager, started on first use."""

    def __init__(self) -> None:
        self._manager: StreamableHTTPSessionManager | None = None
        self._lock = anyio.Lock()
        self._stop = anyio.Event()
        self._tasks: TaskGroup | None = None

    def bind(self, tasks: TaskGroup) -> None:
        """The lifespan's task group, on which the manager will run."""
        self._tasks = tasks

    def stop(self) -> None:
        """The server stops: end the manager's run (and its requests)."""
        self._stop.set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope, receive)
        try:
            await run_in_threadpool(require, request, store_of(request))
        except Denied as exc:
            await error(exc.status, exc.message)(scope, receive, send)
            return
        try:
            manager = await self._started(request)
        except ImportError as exc:
            extra = f"the mcp extra: pip install 'corral[mcp]' ({exc})"
            await error(501, f"this server cannot serve MCP: it needs {extra}")(
                scope, receive, send
            )
            return
        await manager.handle_request(scope, receive, send)

    async def _started(self, request: Request) -> StreamableHTTPSessionManager:
        """The manager, made and running (the first call makes it)."""
        async with self._lock:
            if self._manager is None:
                from corral.mcp.http import session_manager  # noqa: PLC0415 - on first use

                assert self._tasks is not None, "bound by the app's lifespan"
                manager = session_manager(request.app.state.settings)
                running = anyio.Event()
                self._tasks.start_soon(self._run, manager, running)
                await running.wait()
                self._manager = manager
            return self._manager

    async def _run(self, manager: Any, running: anyio.Event) -> None:
        async with manager.run():
            running.set()
            await self._stop.wait()
