"""An MCP tool call's round trip, on stdio and over HTTP, beside the same read through the
CLI and the HTTP API (issue 32).

One `corral serve` over a fresh SQLite store holding one task; each round, one after the
other, in the same minutes:

- mcp stdio: `show_task` through the SDK's client to one `corral mcp` process (its
  session opened once, before the rounds);
- mcp http: `show_task` through the SDK's client to `/mcp` of the server (an operator
  token; the SDK's streamable HTTP, stateless: each call is one POST);
- cli: a fresh `corral show ID --json` process (fork, exec, imports, exit);
- http api: `GET /api/tasks/ID` on one keep-alive connection.

Wall time around each call; p50 and p95 per path, and each MCP path's p50 as a ratio of
the CLI's and of the HTTP API's (the floor the same read has without MCP). The issue sets
no bound: the figures are printed, nothing is judged.

    .venv/bin/python bench/mcp_roundtrip.py [--rounds 200] [--warm-up 10]
"""

from __future__ import annotations

import argparse
import http.client
import json
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Awaitable, Callable

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from corral.model.tasks import NewTask
from corral.store import open_store
from corral.usecases import tasks
from measure import Spread, banner, fresh_process_env, ms, table, temp_dir
from serve_harness import Server, served

PATHS = ("mcp stdio", "mcp http", "cli", "http api")
CORRAL = [sys.executable, "-m", "corral.cli.main"]


def main() -> int:
    """Measure the four paths, round after round; print the spreads and ratios."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warm-up", type=int, default=10)
    args = parser.parse_args()
    banner("mcp_roundtrip", "show a task: MCP on stdio and over HTTP, the CLI, the HTTP API")
    with temp_dir("mcp") as folder, served("sqlite", folder) as server:
        with open_store(server.db) as store:
            task_id = tasks.enqueue(store, NewTask(title="measured")).id
        timings = anyio.run(_measure, server, task_id, args.rounds, args.warm_up)
    _report(timings)
    return 0


async def _measure(
    server: Server, task_id: str, rounds: int, warm_up: int
) -> dict[str, list[float]]:
    """Every path once a round, warm-up rounds untimed; the seconds each call took."""
    env = fresh_process_env(server.db)
    params = StdioServerParameters(command=CORRAL[0], args=[*CORRAL[1:], "mcp"], env=env)
    headers = {"Authorization": f"Bearer {server.operator_token}"}
    port = int(server.url.rsplit(":", 1)[1])
    api = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    timings: dict[str, list[float]] = defaultdict(list)
    async with (
        Client(params) as stdio,
        create_mcp_http_client(headers=headers) as http_client,
        Client(streamable_http_client(f"{server.url}/mcp", http_client=http_client)) as remote,
    ):
        calls: dict[str, Callable[[], Awaitable[None]]] = {
            "mcp stdio": lambda: _show(stdio, task_id),
            "mcp http": lambda: _show(remote, task_id),
            "cli": lambda: _cli_show(env, task_id),
            "http api": lambda: _api_show(api, headers, task_id),
        }
        for round_no in range(warm_up + rounds):
            for name in PATHS:
                started = time.perf_counter()
                await calls[name]()
                if round_no >= warm_up:
                    timings[name].append(time.perf_counter() - started)
    api.close()
    return timings


async def _show(client: Client, task_id: str) -> None:
    result = await client.call_tool("show_task", {"task_id": task_id})
    if result.is_error or (result.structured_content or {}).get("id") != task_id:
        raise RuntimeError(f"show_task failed: {result.content}")


async def _cli_show(env: dict[str, str], task_id: str) -> None:
    done = subprocess.run(
        [*CORRAL, "show", task_id, "--json"], env=env, capture_output=True, check=False
    )
    if done.returncode != 0 or json.loads(done.stdout)["id"] != task_id:
        raise RuntimeError(f"corral show failed: {done.stderr!r}")


async def _api_show(api: http.client.HTTPConnection, headers: dict[str, str], task_id: str) -> None:
    api.request("GET", f"/api/tasks/{task_id}", headers=headers)
    answer = api.getresponse()
    body = answer.read()
    if answer.status != 200 or json.loads(body)["id"] != task_id:
        raise RuntimeError(f"GET /api/tasks failed: {answer.status} {body!r}")


def _report(timings: dict[str, list[float]]) -> None:
    spreads = {name: Spread.of(timings[name]) for name in PATHS}
    rows = [[name, s.n, ms(s.p50_s), ms(s.p95_s), ms(s.max_s)] for name, s in spreads.items()]
    print(table(["path", "calls", "p50 ms", "p95 ms", "max ms"], rows))
    cli, api = spreads["cli"].p50_s, spreads["http api"].p50_s
    print()
    for name in ("mcp stdio", "mcp http"):
        p50 = spreads[name].p50_s
        print(f"{name}: p50 {p50 / cli:.2f}x the CLI's, {p50 / api:.2f}x the HTTP API's")


if __name__ == "__main__":
    sys.exit(main())
