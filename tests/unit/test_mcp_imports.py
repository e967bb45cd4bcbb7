"""The MCP SDK (the optional extra `corral[mcp]`) is imported by `corral mcp` and by `/mcp`'s
first request alone: no other command, and no `corral serve` without MCP traffic, pays
for it at start-up (bench/cli_latency.py)."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from tests.unit.test_commands import imported_by

# Build `corral serve`'s app in a fresh interpreter and print the modules it imported.
SERVE_APP = """
import json, sys
from corral.foundation.settings import Settings
from corral.server.app import create_app
from corral.store import open_store
create_app(open_store(sys.argv[1]), Settings())
sys.stdout.write(json.dumps(sorted(sys.modules)))
"""


def _sdk(modules: list[str]) -> list[str]:
    return [m for m in modules if m == "mcp" or m.startswith(("mcp.", "corral.mcp"))]


@pytest.mark.parametrize(
    "argv", [["list"], ["add", "--help"], ["serve", "--help"], ["mcp", "--help"]]
)
def test_no_command_imports_the_sdk_before_it_serves_mcp(argv: list[str]) -> None:
    """Commands (`mcp --help` too) import neither the SDK nor corral.mcp."""
    assert [] == _sdk(imported_by(argv))


def test_the_servers_app_imports_the_sdk_only_for_mcp_traffic(tmp_path) -> None:
    """`corral serve`'s app, with its `/mcp` route, is built without the SDK."""
    done = subprocess.run(
        [sys.executable, "-c", SERVE_APP, str(tmp_path / "corral.db")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert [] == _sdk(json.loads(done.stdout))
