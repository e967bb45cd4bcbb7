"""The remote store's HTTP/1.1 client against a peer on loopback that writes exact bytes:
each way an answer may be framed, keep-alive, and the malformed answers it must refuse."""

from __future__ import annotations

import socket
import threading
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
    return Connection("127.0.0.1", peer.port, tls=False, timeout=5)


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
