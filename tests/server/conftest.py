"""Fixtures of the server tests: a store, tokens made with the CLI, `corral serve` on it as
a real process on loopback, and the other processes a test starts beside it.

`server` serves a SQLite store; `served` is parametrised over both stores (the PostgreSQL
one a schema of its own, tests/conftest.py's `pg_url`).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from corral import Store, open_store

CORRAL = [sys.executable, "-m", "corral.cli.main"]

# Bodies over this are offered before they are sent (`Server._offer`): the routes' limit.
OFFERED_BYTES = 1 << 20


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Server:
    """A store, tokens made with the CLI, and `corral serve` on it."""

    def __init__(self, folder: Path, db: str | None = None, *, init: bool = True) -> None:
        self.folder = folder
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        self.env["CORRAL_DB"] = db or str(folder / ".corral" / "corral.db")
        if init:
            (folder / ".corral").mkdir()
            assert 0 == self.corral("init").returncode
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.ca: ssl.SSLContext | None = None  # set by start_tls: the test's client trusts it
        self.log = folder / f"serve-{self.port}.log"
        self.children: list[subprocess.Popen[bytes]] = []

    @property
    def db(self) -> str:
        """The store's URL."""
        return self.env["CORRAL_DB"]

    def again(self) -> Server:
        """Another server (not started) on the same store, on a port of its own."""
        return Server(self.folder, self.db, init=False)

    def corral(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CORRAL, *args],
            env=self.env,
            cwd=self.folder,
            capture_output=True,
            text=True,
            check=False,
        )

    def token(self, role: str, *queues: str, name: str | None = None) -> str:
        named = () if name is None else ("--name", name)
        made = self.corral(
            "token", "create", "--role", role, *named, *[f"--queue={q}" for q in queues]
        )
        assert 0 == made.returncode, made.stderr
        return made.stdout.strip()

    @contextlib.contextmanager
    def store(self) -> Iterator[Store]:
        """The store the server serves, opened in the test's process to look at it."""
        opened = open_store(self.env["CORRAL_DB"])
        try:
            yield opened
        finally:
            opened.close()

    def start(self, *args: str) -> None:
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [*CORRAL, "serve", "--port", str(self.port), *args],
                env=self.env,
                cwd=self.folder,
                stdout=log,
                stderr=log,
                start_new_session=True,  # `--workers N` processes die with it (close)
            )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                if 200 == self.call("GET", "/healthz")[0]:
                    return
            except OSError:
                time.sleep(0.02)
        raise AssertionError("corral serve did not answer /healthz")

    def start_tls(self, cert: Path, key: Path) -> None:
        """Start serving HTTPS with `cert`, which this test's own requests trust."""
        self.ca = ssl.create_default_context(cafile=str(cert))
        self.url = f"https://localhost:{self.port}"
        self.start("--certfile", str(cert), "--keyfile", str(key))

    def spawn(self, argv: list[str], name: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
        """Start `argv` beside the server in a session of its own, output to NAME.log;
        it and its processes are killed at the end of the test."""
        with open(self.folder / f"{name}.log", "ab") as log:
            proc = subprocess.Popen(
                argv,
                env={**self.env, **env},
                cwd=self.folder,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.children.append(proc)
        return proc

    def call(
        self,
        method: str,
        path: str,
        token: str | None = None,
        body: bytes | None = None,
        timeout_s: float = 10,
    ) -> tuple[int, Any]:
        """(status, the JSON answer, None when it has no body) of one request."""
        if body is not None and len(body) > OFFERED_BYTES:
            return self._offer(method, path, token, len(body), timeout_s)
        url = f"{self.url}{path}"
        request = urllib.request.Request(url, data=body, method=method)  # noqa: S310 - http://
        if token is not None:
            request.add_header("Authorization", f"Bearer {token}")
        if body is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(  # noqa: S310 - http(s)://
                request, timeout=timeout_s, context=self.ca
            ) as answer:
                return answer.status, _json(answer.read())
        except urllib.error.HTTPError as exc:
            return exc.code, _json(exc.read())

    def _offer(
        self, method: str, path: str, token: str | None, size: int, timeout_s: float
    ) -> tuple[int, Any]:
        """A request whose body of `size` bytes waits for the server's `100 Continue`
        (Expect: 100-continue): a body the server refuses unread (413) is never sent. Sent
        at once, it races the server's answer and close, and the client may meet a reset
        while still writing. A server that asks for the body leaves this to time out."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout_s)
        try:
            conn.putrequest(method, path)
            if token is not None:
                conn.putheader("Authorization", f"Bearer {token}")
            conn.putheader("Content-Type", "application/json")
            conn.putheader("Content-Length", str(size))
            conn.putheader("Expect", "100-continue")
            conn.endheaders()
            response = conn.getresponse()
            return response.status, _json(response.read())
        finally:
            conn.close()

    def send(self, method: str, path: str, token: str | None, data: Any) -> tuple[int, Any]:
        """`call` with `data` as the JSON body."""
        return self.call(method, path, token, json.dumps(data).encode())

    def text(self, path: str, token: str, namespace: str | None = None) -> str:
        """The body of a GET that answers text (/metrics), in `namespace` if given."""
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}")
        request.add_header("Authorization", f"Bearer {token}")
        if namespace is not None:
            request.add_header("X-Corral-Namespace", namespace)
        with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - http://
            body: bytes = answer.read()
            return body.decode()

    def stream(self, path: str, token: str | None, last_event_id: str | None = None) -> EventStream:
        """An SSE stream of `path`, opened (its status read)."""
        return EventStream(self.port, path, token, last_event_id)

    def stop(self) -> str:
        """Stop the server; what it printed."""
        assert self.proc is not None
        self.proc.terminate()
        self.proc.wait(timeout=20)
        return self.log.read_text()

    def kill(self) -> None:
        """Kill the server and what the test started beside it."""
        self.close()

    def close(self) -> None:
        """Kill what is still running: the children with their sessions, then the server."""
        for proc in self.children:
            if proc.poll() is None:
                try:  # its session, when it has one of its own (spawn), else itself
                    os.killpg(proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    proc.kill()
                proc.wait(timeout=10)
        if self.proc is not None:
            # The session, not the process: a `--workers N` server's processes outlive a
            # SIGKILL of their supervisor.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def _json(raw: bytes) -> Any:
    return json.loads(raw) if raw else None


@dataclass(frozen=True)
class Message:
    """One SSE message: its id (None if it had none) and its data (None: an id alone)."""

    id: str | None
    data: str | None


class EventStream:
    """An SSE client: one GET, then messages read line by line as the server sends them.

    Comments (`: ping`) are skipped; a message with an `id:` and no data is returned too,
    as the place a client would resume from. A read waits at most `timeout_s` for a line.
    """

    def __init__(
        self,
        port: int,
        path: str,
        token: str | None,
        last_event_id: str | None = None,
        timeout_s: float = 10.0,
    ) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout_s)
        headers = {"Accept": "text/event-stream"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        if last_event_id is not None:
            headers["Last-Event-ID"] = last_event_id
        self.conn.request("GET", path, headers=headers)
        self.response = self.conn.getresponse()
        self.status = self.response.status
        self.last_id = last_event_id

    def message(self) -> Message | None:
        """The next message; None once the server ended the stream."""
        ident: str | None = None
        data: list[str] = []
        while True:
            raw = self.response.readline()
            if not raw:
                return None
            line = raw.decode("utf-8").rstrip("\r\n")
            if not line:
                if ident is None and not data:
                    continue  # a comment's blank line
                if ident is not None:
                    self.last_id = ident
                return Message(ident, "\n".join(data) if data else None)
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "id":
                ident = value
            elif field == "data":
                data.append(value)

    def events(self, n: int) -> list[dict[str, Any]]:
        """The next `n` events (messages with data), parsed."""
        found: list[dict[str, Any]] = []
        while len(found) < n:
            got = self.message()
            assert got is not None, f"the stream ended after {len(found)} of {n} events"
            if got.data is not None:
                found.append(json.loads(got.data))
        return found

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    """A server of a SQLite store (not started: the test makes its tokens first)."""
    made = Server(tmp_path)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture(params=["sqlite", "postgresql"])
def served(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    """A server of each store (not started)."""
    db = str(request.getfixturevalue("pg_url")) if request.param == "postgresql" else None
    made = Server(tmp_path, db)
    try:
        yield made
    finally:
        made.close()
