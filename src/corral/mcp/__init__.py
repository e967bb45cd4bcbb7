"""corral's MCP server: the queue offered to agents over the Model Context Protocol.

Two transports, one server (`build.py`): `corral mcp` on stdio (`stdio.py`), in the store
and namespace the CLI would use, and `/mcp` of `corral serve` (`http.py`, streamable
HTTP), behind the API's bearer tokens, roles and namespaces. Only these two import the
SDK (the optional extra `corral[mcp]`); a tool is one use case, as a CLI command is
(`operations.py`), on behalf of a caller (`caller.py`): the task, claim token and run
corral gave the agent. A question or a permission request makes the caller's task wait
for a person, and the call waits for the answer (`waits.py`).

    agent ──tools/call──► build.py (role, caller) ──► operations.py ──► usecases ──► store
"""
