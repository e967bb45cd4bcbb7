"""Fixtures the server's test files share: `served`, a `corral serve` over each store."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.server.harness import Server


@pytest.fixture(params=["sqlite", "postgresql"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """A server over each store; its processes (and the workers a test adds to
    `served.workers`) killed at the end."""
    db = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
    made = Server(tmp_path, db)
    made.workers: list[subprocess.Popen[bytes]] = []  # type: ignore[misc]
    try:
        yield made
    finally:
        for proc in [made.proc, *made.workers]:
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
