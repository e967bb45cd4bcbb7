"""`corral mcp`: the MCP server on stdio (corral/mcp), for an agent's MCP configuration.

The SDK is the optional extra `corral[mcp]`, imported by this command alone.
"""

from __future__ import annotations

from corral.cli.commands import Command
from corral.cli.context import Context
from corral.foundation.errors import InvalidInput


def cmd_mcp(ctx: Context) -> int:
    """Serve MCP on standard input and output until the client closes them; exit 0."""
    store, settings = ctx.store, ctx.settings  # a bad store or config: one line, exit 3 or 2
    try:
        from corral.mcp.stdio import serve  # the SDK, for `mcp` alone
    except ImportError as exc:
        raise InvalidInput("mcp", "the mcp extra: pip install 'corral[mcp]'", str(exc)) from None
    ctx.long_running()
    serve(store, settings)
    return 0


COMMANDS = (Command("mcp", cmd_mcp, "serve MCP on stdio: the queue's tools for an agent"),)
