"""The SDK's own MCP client, connected to `corral mcp` on stdio (a real subprocess) or to
`/mcp` of a real `corral serve`, for the MCP tests (test_mcp.py) and the stand-in agent
(mcp_agent.py), which imports it as a file beside it."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import AsyncIterator, Mapping
from typing import Any

from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

CORRAL_MCP = [sys.executable, "-m", "corral.cli.main", "mcp"]


@contextlib.asynccontextmanager
async def over_stdio(
    env: Mapping[str, str], cwd: str, handler: Any = None
) -> AsyncIterator[Client]:
    """A client of `corral mcp`, started with `env` in `cwd`; `handler` sees every message
    the server sends."""
    params = StdioServerParameters(
        command=CORRAL_MCP[0], args=CORRAL_MCP[1:], env=dict(env), cwd=cwd
    )
    async with Client(params, message_handler=handler) as client:
        yield client


@contextlib.asynccontextmanager
async def over_http(
    url: str, headers: Mapping[str, str], handler: Any = None
) -> AsyncIterator[Client]:
    """A client of `url` (a server's /mcp), each request with `headers` (its token);
    `handler` sees every message the server sends."""
    async with (
        create_mcp_http_client(headers=dict(headers)) as http,
        Client(streamable_http_client(url, http_client=http), message_handler=handler) as client,
    ):
        yield client


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    """The tool's structured result (or its text when it has none); AssertionError with
    the tool's one line if it failed."""
    result = await client.call_tool(tool, arguments)
    text = "".join(getattr(c, "text", "") for c in result.content)
    if result.is_error:
        raise AssertionError(f"{tool} failed: {text}")
    return result.structured_content if result.structured_content is not None else text


async def refused(client: Client, tool: str, **arguments: Any) -> str:
    """The one line a tool call's error result says; AssertionError if it succeeded."""
    result = await client.call_tool(tool, arguments)
    text = "".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error, f"{tool} succeeded: {text}"
    return text


def decoded(text: str) -> Any:
    """A tool's JSON text (the permission prompt answers JSON as text)."""
    return json.loads(text)
