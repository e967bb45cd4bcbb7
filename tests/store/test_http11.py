"""The remote store's HTTP/1.1 client against a peer on loopback that writes exact bytes:
each way an answer may be framed, keep-alive, the malformed answers it must refuse, and a
peer that trickles its answer a byte at a time, which the request's total time bounds."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from corral.store.remote.http11 import MAX_LINE, Connection, HttpError


class Peer:
    """A one-connection-at-a-time server that answers each request with the next of
    `answers` (bytes) and records what it was sent."""

    def __init__(self, answers: list[bytes]) -> None:
        self.answers = answers
        self.requests: list[bytes] = []
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while self.answers:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            with conn, conn.makefile("rb") as reader:
                while self.answers:
                    head = b""
                    while not head.endswith(b"\r\n\r\n"):
                        line = reader.readline()
                        if not line:
                            break
                        head += line
                    if not head:
                        break
                    length = 0
                    for line in head.split(b"\r\n"):
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":")[1])
                    self.requests.append(head + reader.read(length))
                    answer = self.answers.pop(0)
                    conn.sendall(answer)
                    if b"Connection: close" in answer:
                        break

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def peer() -> Iterator[type[Peer]]:
    made: list[Peer] = []

    def make(answers: list[bytes]) -> Peer:
        made.append(Peer(answers))
        return made[-1]

    yield make  # type: ignore[misc]
    for each in made:
        each.close()


def _connection(peer: Peer) -> Connection:
    return Connection("127.0.0.1", peer.port, tls=False, timeout_s=5)


def test_answers_by_length_chunked_and_interim_on_one_kept_alive_connection(peer):
    server = peer(
        [
            b'HTTP/1.1 200 OK\r\ncontent-length: 12\r\n\r\n{"result":1}',
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n4;ext=1\r\nabcd\r\n3\r\nefg\r\n0\r\nX-T: 1\r\n\r\n",
            b"HTTP/1.1 204 No Content\r\n\r\n",
        ]
    )
    conn = _connection(server)
    assert (200, b'{"result":1}') == conn.request("POST", "/a", b"{}", {"X-A": "1"})
    assert (201, b"abcdefg") == conn.request("GET", "/b", None, {})
    assert (204, b"") == conn.request("GET", "/c", None, {})
    conn.close()
    assert 1 == server.connections
    first, second, _ = server.requests
    assert first.startswith(b"POST /a HTTP/1.1\r\nHost: 127.0.0.1:")
    assert b"X-A: 1\r\nContent-Length: 2\r\n\r\n{}" in first
    assert b"Content-Length" not in second


def test_a_close_is_honoured_and_the_next_request_opens_a_new_connection(peer):
    server = peer(
        [
            b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil the end",
            b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        ]
    )
    conn = _connection(server)
    assert (200, b"until the end") == conn.request("GET", "/", None, {})
    assert conn.sock is None
    assert (200, b"ok") == conn.request("GET", "/", None, {})
    conn.close()
    assert 2 == server.connections


@pytest.mark.parametrize(
    "answer",
    [
        b"SSH-2.0-OpenSSH\r\n\r\n",
        b"HTTP/1.1 2x0 OK\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\nzz\r\n",
        b"HTTP/1.1 200 OK\r\n" + b"X: 1\r\n" * 101 + b"\r\n",
        b"HTTP/1.1 200 OK\r\nX: " + b"a" * MAX_LINE + b"\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nConnection: close\r\n",  # closed within the head
    ],
)
def test_a_malformed_answer_is_an_error_and_closes_the_connection(peer, answer):
    conn = _connection(peer([answer]))
    with pytest.raises(HttpError):
        conn.request("GET", "/", None, {})
    assert conn.sock is None


def test_a_line_break_in_a_header_value_is_refused_before_anything_is_sent(peer):
    server = peer([b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"])
    conn = _connection(server)
    with pytest.raises(ValueError, match="line break"):
        conn.request("GET", "/", None, {"Authorization": "Bearer x\r\nX-Evil: 1"})
    assert [] == server.requests


class Trickler:
    """A server that reads each request's head, then sends an answer's status line and a
    header one byte every `every_s` seconds, never finishing it, until the client leaves."""

    def __init__(self, every_s: float) -> None:
        self.every_s = every_s
        self.stopped = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._trickle, args=(conn,), daemon=True).start()

    def _trickle(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            while reader.readline() not in (b"\r\n", b""):
                pass
            try:
                conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                while not self.stopped.wait(self.every_s):
                    conn.sendall(b"x")
            except OSError:
                return  # the client gave up: what the tests expect

    def close(self) -> None:
        self.stopped.set()
        self._listener.close()


@pytest.fixture
def trickler() -> Iterator[type[Trickler]]:
    made: list[Trickler] = []

    def make(every_s: float) -> Trickler:
        made.append(Trickler(every_s))
        return made[-1]

    yield make  # type: ignore[misc]
    for each in made:
        each.close()


def test_a_trickled_answer_ends_at_the_request_s_total_time(trickler):
    """A peer sending a byte every 0.2 s never lets a read time out; the request still
    gives up after its 1 s in all, with a TimeoutError that says so, and closes."""
    conn = Connection("127.0.0.1", trickler(0.2).port, tls=False, timeout_s=1)
    started = time.monotonic()
    with pytest.raises(TimeoutError, match="no whole answer within 1 s"):
        conn.request("GET", "/", None, {})
    assert time.monotonic() - started < 3
    assert conn.sock is None


@pytest.mark.slow
def test_a_remote_command_gives_up_on_a_trickling_server_with_one_line(trickler, tmp_path):
    """The probe's case: `corral list` on a server sending a byte every 2 s exits 3 with
    one line once the call's total time (TIMEOUT_S, 30 s) is spent."""
    from corral.store.remote.transport import TIMEOUT_S

    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env |= {"CORRAL_DB": f"http://127.0.0.1:{trickler(2).port}", "CORRAL_TOKEN": "corral_x"}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "corral.cli.main", "list"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S + 30,
        check=False,
    )
    assert TIMEOUT_S <= time.monotonic() - started < TIMEOUT_S + 15
    assert 3 == done.returncode
    assert 1 == len(done.stderr.splitlines()), done.stderr
    assert f"no whole answer within {TIMEOUT_S:g} s" in done.stderr
