"""The HTTP/1.1 a remote store speaks to `corral serve`: one keep-alive connection, a request
and its whole answer at a time.

Why not `http.client`: every remote command is a fresh process, and importing it costs
about 20 ms (it imports `email.parser` and `ssl` at its top) on a command whose local twin
takes 50 ms in all; issue 17 holds a remote `corral ready` to 1.5x a local one. What a remote
store needs is small and fixed: a request with a Content-Length body, and an answer framed
by Content-Length, chunked transfer coding, or the connection's end (RFC 9112 section 6.3).
Everything else, such as redirects, proxies, cookies and compression, corral does not use.
`ssl` is imported only for an https:// server.

Limits keep a wrong or hostile peer from growing memory without bound: a status or
header line of at most 64 KiB, at most 100 header lines. A malformed answer is an
`HttpError`, which the store reports as the server unreachable (exit 3). Nor may it hold
a request without bound: `timeout_s` is the whole request's time, from connecting to the
last byte of the answer, not each read's (a peer that sends a byte a second would
otherwise keep a read alive for ever): every read waits only for what is left of it.
"""

from __future__ import annotations

import io
import socket
import time
from typing import Any

MAX_LINE = 65536
MAX_HEADERS = 100


class HttpError(OSError):
    """The peer's answer is not HTTP/1.1 as this client reads it."""


class Connection:
    """One keep-alive HTTP/1.1 connection, opened at the first request and again after the
    peer closes it. `sock` is the open socket (None when closed): callers may test it for
    a close while idle, or shut it down to cut a request in flight on another thread."""

    def __init__(self, host: str, port: int | None, *, tls: bool, timeout_s: float) -> None:
        self.host = host
        self.port = port or (443 if tls else 80)
        self.tls = tls
        self.timeout_s = timeout_s  # a whole request's bound (module doc)
        self.sock: socket.socket | None = None
        self._file: Any = None
        self._reader: _DeadlineReader | None = None

    def request(
        self, method: str, target: str, body: bytes | None, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        """Send one request; its status and whole body. OSError (HttpError among them) on
        any failure, after which the connection is closed."""
        deadline = time.monotonic() + self.timeout_s
        try:
            if self.sock is None:
                self._open()
            assert self.sock is not None and self._reader is not None
            self._reader.deadline = deadline
            self.sock.settimeout(self.timeout_s)  # sendall's bound is its whole time
            self.sock.sendall(_head(method, target, self._authority(), body, headers))
            status, fields = self._read_head()
            data = self._read_body(method, status, fields)
        except TimeoutError:
            self.close()
            raise TimeoutError(f"no whole answer within {self.timeout_s:g} s") from None
        except BaseException:
            self.close()
            raise
        if "close" in fields.get("connection", "").lower():
            self.close()
        return status, data

    def close(self) -> None:
        sock, file, self.sock, self._file, self._reader = self.sock, self._file, None, None, None
        if file is not None:
            file.close()
        if sock is not None:
            sock.close()

    # ---- opening -------------------------------------------------------------------------

    def _open(self) -> None:
        # An ASCII host goes to getaddrinfo as bytes: a str host is encoded with the idna
        # codec, whose first import costs every remote command about 5 ms.
        named: Any = self.host.encode("ascii") if self.host.isascii() else self.host
        sock = socket.create_connection((named, self.port), self.timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self.tls:
            import ssl  # noqa: PLC0415  # only an https:// server pays for it

            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=self.host)
        self.sock = sock
        self._reader = _DeadlineReader(sock)
        self._file = io.BufferedReader(self._reader)

    def _authority(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.tls else 80
        return host if self.port == default else f"{host}:{self.port}"

    # ---- reading the answer --------------------------------------------------------------

    def _line(self) -> bytes:
        line: bytes = self._file.readline(MAX_LINE + 1)
        if not line:
            raise HttpError("the server closed the connection")
        if len(line) > MAX_LINE:
            raise HttpError("an answer line is too long")
        return line

    def _read_head(self) -> tuple[int, dict[str, str]]:
        """The status and header fields (names lower-cased) of the next final answer;
        interim 1xx answers are skipped."""
        while True:
            version, _, rest = self._line().decode("latin-1").partition(" ")
            code = rest[:3]
            if not version.startswith("HTTP/1.") or not code.isdigit():
                raise HttpError(f"not an HTTP/1.1 status line: {version[:20]!r}")
            fields: dict[str, str] = {}
            for _ in range(MAX_HEADERS + 1):
                line = self._line()
                if line in (b"\r\n", b"\n"):
                    break
                name, colon, value = line.decode("latin-1").partition(":")
                if not colon:
                    raise HttpError("a header line without a colon")
                fields[name.strip().lower()] = value.strip()
            else:
                raise HttpError("too many header lines")
            if not 100 <= int(code) < 200:
                return int(code), fields

    def _read_body(self, method: str, status: int, fields: dict[str, str]) -> bytes:
        if method == "HEAD" or status in (204, 304):
            return b""
        if "chunked" in fields.get("transfer-encoding", "").lower():
            return self._read_chunked()
        length = fields.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise HttpError(f"a bad Content-Length: {length[:20]!r}")
            return self._read_exactly(int(length))
        data: bytes = self._file.read()  # framed by the connection's end
        self.close()
        return data

    def _read_exactly(self, size: int) -> bytes:
        data: bytes = self._file.read(size)
        if len(data) < size:
            raise HttpError("the server closed the connection within an answer")
        return data

    def _read_chunked(self) -> bytes:
        parts = []
        while True:
            size_text = self._line().split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                raise HttpError("a bad chunk size") from None
            if size == 0:
                break
            parts.append(self._read_exactly(size))
            if self._line() not in (b"\r\n", b"\n"):
                raise HttpError("a chunk without its line end")
        for _ in range(MAX_HEADERS + 1):  # trailer fields, unused
            if self._line() in (b"\r\n", b"\n"):
                return b"".join(parts)
        raise HttpError("too many trailer lines")


class _DeadlineReader(io.RawIOBase):
    """A socket's bytes, each read waiting only until `deadline` (time.monotonic)."""

    def __init__(self, sock: socket.socket) -> None:
        super().__init__()
        self.sock = sock
        self.deadline = 0.0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left_s = self.deadline - time.monotonic()
        if left_s <= 0:
            raise TimeoutError("the request's time is up")
        self.sock.settimeout(left_s)
        return self.sock.recv_into(buffer)


def _head(
    method: str, target: str, authority: str, body: bytes | None, headers: dict[str, str]
) -> bytes:
    if any(c in text for text in (target, *headers.values()) for c in "\r\n"):
        raise ValueError("a request target or header value with a line break")
    lines = [f"{method} {target} HTTP/1.1", f"Host: {authority}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if body is not None or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(body or b'')}")
    head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
    return head + body if body else head
