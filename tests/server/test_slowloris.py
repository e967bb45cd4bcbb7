"""`corral serve` under a slowloris, as a real process with systemd's 1,024 descriptors:
connections that never finish their heads neither exhaust its descriptors nor keep
others out (server/connection_guard.py)."""

from __future__ import annotations

import contextlib
import http.client
import resource
import socket
import subprocess
import time
from collections.abc import Iterator

import pytest

from .conftest import CORRAL, Server

ATTACKER = "127.0.0.2"  # the loopback is 127.0.0.0/8: a second client address on one host
IDLE_CONNECTIONS = 1100
PARTIAL_HEAD = b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "


def _systemd_descriptors() -> None:
    """In the server's process, before it runs: systemd's default descriptor limit."""
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


def _start_limited(server: Server) -> None:
    """Start `corral serve` with 1,024 descriptors; return once /healthz answers."""
    with open(server.log, "ab") as log:
        server.proc = subprocess.Popen(
            [*CORRAL, "serve", "--port", str(server.port)],
            env=server.env,
            cwd=server.folder,
            stdout=log,
            stderr=log,
            start_new_session=True,
            preexec_fn=_systemd_descriptors,  # noqa: PLW1509 - a setrlimit, no threads yet
        )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            if 200 == server.call("GET", "/healthz", timeout_s=2)[0]:
                return
        time.sleep(0.02)
    raise AssertionError("corral serve did not answer /healthz")


@contextlib.contextmanager
def _idle_connections(port: int, count: int) -> Iterator[list[socket.socket]]:
    """`count` connections from ATTACKER that start a request's head and never finish it
    (connected without waiting: the server closes most of them at once)."""
    opened: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket()
            opened.append(sock)
            sock.bind((ATTACKER, 0))
            sock.setblocking(False)
            sock.connect_ex(("127.0.0.1", port))
        time.sleep(0.5)  # the attack's own pace: its handshakes end, nothing waits on it
        for sock in opened:
            with contextlib.suppress(OSError):
                sock.send(PARTIAL_HEAD)
        yield opened
    finally:
        for sock in opened:
            sock.close()


def _get(port: int, path: str, source: str) -> tuple[int, float]:
    """(status, seconds taken) of a GET of `path` sent from address `source`."""
    started = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
    try:
        conn.request("GET", path)
        return conn.getresponse().status, time.monotonic() - started
    finally:
        conn.close()


def _get_when_admitted(port: int, path: str, source: str, within_s: float) -> tuple[int, float]:
    """`_get`, again while the server closes the connection on accepting it (no place for
    `source` yet): a monitor's retries, for at most `within_s`."""
    started = time.monotonic()
    while True:
        try:
            status, _ = _get(port, path, source)
            return status, time.monotonic() - started
        except OSError:
            if time.monotonic() - started > within_s:
                raise
            time.sleep(0.1)


def _enough_descriptors_here() -> None:
    """This test's process holds the 1,100 sockets: raise its own soft limit to do so."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = IDLE_CONNECTIONS + 256
    if soft != resource.RLIM_INFINITY and soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"this process may open {hard} files, the test needs {wanted}")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def test_serve_outlives_connections_that_never_finish_their_heads(server: Server) -> None:
    """With 1,024 descriptors and 1,100 idle connections from one address, another
    address's page and /healthz answer at once, the attacker's own /healthz is answered
    from the reserve within a few seconds, and the server stays up."""
    _enough_descriptors_here()
    _start_limited(server)
    with _idle_connections(server.port, IDLE_CONNECTIONS):
        for path in ("/healthz", "/tasks"):
            status, took_s = _get(server.port, path, "127.0.0.1")
            assert (200, True) == (status, took_s < 5), path
        status, took_s = _get_when_admitted(server.port, "/healthz", ATTACKER, within_s=5)
        assert (200, True) == (status, took_s < 5)
        assert 503 == _get_when_admitted(server.port, "/tasks", ATTACKER, within_s=5)[0]
    assert server.proc is not None and server.proc.poll() is None
    assert "Too many open files" not in server.log.read_text()


def _healthz_on(sock: socket.socket) -> bytes:
    """The whole answer to GET /healthz sent on `sock`, which stays open."""
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    answer = b""
    while not answer.endswith(b"}\n"):
        chunk = sock.recv(4096)
        if not chunk:
            break  # closed: the caller's assert shows what came
        answer += chunk
    return answer


def _closed_after_s(sock: socket.socket, within_s: float) -> float:
    """Seconds until the server closes `sock` (reads end), reading what it sends."""
    started = time.monotonic()
    sock.settimeout(within_s)
    while sock.recv(4096):
        pass
    return time.monotonic() - started


@pytest.mark.slow
def test_a_head_that_trickles_is_cut_off_on_a_new_and_a_kept_alive_connection(
    server: Server,
) -> None:
    """A head sent a byte at a time is closed HEAD_S after its first byte, both as a
    connection's first request and as the next request on a kept-alive connection; a
    kept-alive connection silent as long is still served (keep-alive's own time)."""
    from corral.server.connection_guard import HEAD_S

    _start_limited(server)
    fresh = socket.create_connection(("127.0.0.1", server.port))
    kept = socket.create_connection(("127.0.0.1", server.port))
    idle = socket.create_connection(("127.0.0.1", server.port))
    with fresh, kept, idle:
        for sock in (kept, idle):
            assert _healthz_on(sock).startswith(b"HTTP/1.1 200")
        for sock in (fresh, kept):
            sock.sendall(b"G")
        started = time.monotonic()
        while time.monotonic() - started < HEAD_S + 5:
            try:
                for sock in (fresh, kept):
                    sock.sendall(b"E")
            except OSError:
                break  # closed by the server
            time.sleep(1)  # the trickle: the subject of the test
        for sock in (fresh, kept):
            assert _closed_after_s(sock, within_s=5) < 5
        assert HEAD_S - 1 <= time.monotonic() - started < HEAD_S + 5
        assert _healthz_on(idle).startswith(b"HTTP/1.1 200")
