"""A stand-in agent that speaks only MCP, as an agent with corral in its MCP config does.

Run by a real runner (`corral worker start --exec "python mcp_agent.py MODE"`), it gets
CORRAL_TASK_ID, CORRAL_CLAIM_TOKEN, CORRAL_RUN_ID and CORRAL_DB from the runner, starts
`corral mcp` itself (MODE `stdio`) or calls `/mcp` of the server CORRAL_MCP_URL names
with the worker token in the file CORRAL_MCP_ACCESS_FILE and its claim in X-Corral-*
headers (MODE `http`), and:
says its progress, adds a subtask of its own task, sends a message, then finishes its
task done with a result. It prints one line first, which is its run's transcript.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcp_clients import call, over_http, over_stdio


def _client(mode: str):  # type: ignore[no-untyped-def]
    if mode == "stdio":
        return over_stdio(os.environ, os.getcwd())
    headers = {
        "Authorization": f"Bearer {Path(os.environ['CORRAL_MCP_ACCESS_FILE']).read_text()}",
        "X-Corral-Task-Id": os.environ["CORRAL_TASK_ID"],
        "X-Corral-Claim-Token": os.environ["CORRAL_CLAIM_TOKEN"],
        "X-Corral-Run-Id": os.environ["CORRAL_RUN_ID"],
    }
    return over_http(os.environ["CORRAL_MCP_URL"], headers)


async def main(mode: str) -> None:
    print(f"agent {os.environ['CORRAL_TASK_ID']} starts", flush=True)
    async with _client(mode) as client:
        await call(client, "report_progress", note="halfway there")
        await call(client, "add_subtask", title="follow-up found on the way")
        await call(client, "send_message", to="orchestrator", type="note", body={"by": mode})
        await call(client, "finish", outcome="done", result={"by": "mcp", "mode": mode})


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
