"""`corral serve` as a real process on loopback, for the server's tests: a store (SQLite
in the test's folder, or a PostgreSQL URL), tokens made with the CLI, and the server."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CORRAL = [sys.executable, "-m", "corral.cli.main"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    """A store, tokens made with the CLI, and `corral serve` on it."""

    def __init__(self, folder: Path, db: str | None = None) -> None:
        self.folder = folder
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        self.env["CORRAL_DB"] = db or str(folder / ".corral" / "corral.db")
        (folder / ".corral").mkdir()
        assert 0 == self.corral("init").returncode
        self.port = _free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = folder / "serve.log"

    def corral(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CORRAL, *args],
            env=self.env,
            cwd=self.folder,
            capture_output=True,
            text=True,
            check=False,
        )

    def token(self, role: str, *queues: str) -> str:
        made = self.corral("token", "create", "--role", role, *[f"--queue={q}" for q in queues])
        assert 0 == made.returncode, made.stderr
        return made.stdout.strip()

    def start(self, *args: str) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [*CORRAL, "serve", "--port", str(self.port), *args],
                env=self.env,
                cwd=self.folder,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if 200 == self.call("GET", "/healthz")[0]:
                    return
            except OSError:
                time.sleep(0.02)
        raise AssertionError("corral serve did not answer /healthz")

    def call(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: bytes | None = None,
        timeout_s: float = 10,
    ) -> tuple[int, Any]:
        """(status, the JSON answer, None when it has no body) of one request."""
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=body, method=method
        )
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        if body is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as answer:  # noqa: S310 - http://
                return answer.status, _json(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, _json(exc.read())

    def stop(self) -> str:
        """Stop the server; what it printed."""
        assert self.proc is not None
        self.proc.terminate()
        self.proc.wait(timeout=20)
        return self.log.read_text()

    @property
    def url(self) -> str:
        """Where remote commands reach it."""
        return f"http://127.0.0.1:{self.port}"


def _json(raw: bytes) -> Any:
    return json.loads(raw) if raw else None


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    made = Server(tmp_path)
    try:
        yield made
    finally:
        if made.proc is not None and made.proc.poll() is None:
            made.proc.kill()
            made.proc.wait()
