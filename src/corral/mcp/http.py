"""`/mcp` of `corral serve`: the MCP server over streamable HTTP, behind the API's tokens.

server/mcp_mount.py checks the request's bearer token against `/mcp`'s role (roles.py)
before a byte reaches the SDK, and imports this module on the first request that passes,
so a server that is never asked for MCP never imports the SDK. Each tool call checks its
own least role (`MCP_TOOLS`) on the same token and acts in the token's namespace, as
every route does (auth.require_role): a viewer lists and reads, a worker reports on its
claim, an operator adds tasks. The SDK runs stateless: each POST is a session of its own,
its progress notifications streamed on that POST's answer, so any process of `serve
--workers N` can take any request.
"""

from __future__ import annotations

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.requests import Request

from corral.foundation.settings import Settings
from corral.mcp.build import build
from corral.mcp.caller import Caller, from_headers
from corral.model.api_tokens import ApiToken, Role
from corral.server.auth import Denied, require_role, within_queues
from corral.server.context import store_of
from corral.server.roles import MCP_TOOLS
from corral.store import Store


class HttpAccess:
    """Each call's store and caller, from the HTTP request that carries it."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings

    def store(self, ctx: Context, role: Role, tool: str) -> Store:
        """The request's namespace's store, if its token reaches `tool`'s role; else the
        tool's error, the API's one line (a viewer asked to add: 403's words)."""
        request = _request(ctx)
        store = store_of(request)
        try:
            require_role(request, store, MCP_TOOLS[tool])
        except Denied as exc:
            raise ToolError(exc.message) from None
        return store

    def caller(self, ctx: Context) -> Caller:
        """The caller the request's X-Corral-* headers name."""
        return from_headers(_request(ctx).headers)

    def sender(self, ctx: Context, caller: Caller) -> str:
        """The agent's worker, else the API token's name."""
        return caller.worker_id or _token(ctx).name

    def within_queues(self, ctx: Context, queue: str) -> None:
        """A worker token that names queues touches only theirs (as the routes check)."""
        try:
            within_queues(_token(ctx), queue)
        except Denied as exc:
            raise ToolError(exc.message) from None

    def work_added(self, ctx: Context) -> None:
        """Wake the claims waiting on this server for work."""
        _request(ctx).app.state.work_signal.notify()


def _request(ctx: Context) -> Request:
    request = ctx.request_context.request
    assert isinstance(request, Request), "streamable HTTP carries its request"
    return request


def _token(ctx: Context) -> ApiToken:
    """The request's API token (checked already: store() ran first)."""
    request = _request(ctx)
    return require_role(request, store_of(request), Role.VIEWER)


def session_manager(settings: Settings) -> StreamableHTTPSessionManager:
    """The SDK's manager of `/mcp` requests (run() it for the server's life). Its own Host
    checks are off: corral's host guard (server/host_guard.py) has run before it."""
    server = build(HttpAccess(settings))
    server.streamable_http_app(
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return server.session_manager
