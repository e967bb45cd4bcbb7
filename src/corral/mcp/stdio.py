"""`corral mcp`: the MCP server on standard input and output, for an agent's config.

The agent starts it (`claude mcp add corral -- corral mcp`), so it inherits what corral put
in the agent's environment: the store (`CORRAL_DB`), the namespace (`CORRAL_NAMESPACE`),
and the caller's task, claim token and run (caller.py). It acts as the CLI does on that
store, with no role of its own: whoever may run `corral` there may call every tool.
"""

from __future__ import annotations

import os

import anyio
from mcp.server.mcpserver import Context

from corral.foundation.settings import Settings
from corral.mcp.build import build
from corral.mcp.caller import Caller, from_environment
from corral.model.api_tokens import Role
from corral.store import Store

ANONYMOUS = "mcp"  # a message's sender when the environment names no worker


class StdioAccess:
    """One store for every call, and the caller the environment names."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self._store = store
        self.settings = settings
        self._caller = from_environment(os.environ)

    def store(self, ctx: Context, role: Role, tool: str) -> Store:
        """The CLI's store: stdio has no token, so no role to check."""
        return self._store

    def caller(self, ctx: Context) -> Caller:
        """The caller `CORRAL_TASK_ID`, `CORRAL_CLAIM_TOKEN` ... name."""
        return self._caller

    def sender(self, ctx: Context, caller: Caller) -> str:
        """The agent's worker, else `mcp`."""
        return caller.worker_id or ANONYMOUS

    def within_queues(self, ctx: Context, queue: str) -> None:
        """Every queue: the CLI's reach."""

    def work_added(self, ctx: Context) -> None:
        """Runners find new work by themselves (the store's own wake-ups)."""


def serve(store: Store, settings: Settings) -> None:
    """Serve MCP on stdio until the client closes it."""
    server = build(StdioAccess(store, settings))
    anyio.run(server.run_stdio_async)
