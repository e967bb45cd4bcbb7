"""A store reached over HTTP: `CORRAL_DB=https://host:8787` with `CORRAL_TOKEN=corral_...`.

A remote store is a `Store` whose transport is an `HttpTransport`: each operation its
repositories declare `@served` (store/operations.py) is one POST /api/store/NAME
(`tasks.cancel`) carrying the operation's arguments as JSON (wire.py), answered with its
result or its error, raised here as the same class with the same line, so every command
keeps its exit code. The use cases run here as they do beside a local store; every state
change is still one transaction with its compare-and-set, on the server's store.

The transport is also the remote store's driver, for what a driver answers beside the
database: its URL, a runner's wish to long-poll, no leader lock, no migrations; a
statement, which only the server runs, is refused (`InvalidInput` on `db`, exit 2).

The client is http11.py's, one keep-alive connection per thread (a runner's slots and
heartbeat each have their own), checked before reuse: a connection the server closed while
idle is opened again instead of failing a request it never read.
Unreachable, no whole answer within TIMEOUT_S (a long poll: LONG_POLL_S more), or a 5xx:
`StoreError`, exit 3, which a runner already retries with backoff and jitter; a 4xx is
never retried.

A runner's claims long-poll: once `wake_on_work` says a runner is listening, an exchange
(the one operation declared `long_poll`) that asks for work and finds none is held by the
server up to LONG_POLL_S while it waits for a task to become ready (the store's
notification), and answered `waited`, so the runner asks again at once instead of
sleeping. `stop_waiting` (a runner's stop) ends a
wait in flight and every later one; the wait it cut raises `WaitEnded`, which the runner
takes as its own stop, not as an outage (no warning: runtime/worker/batches.py).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import os
import select
import socket
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

from corral.foundation.errors import InvalidInput, StoreError, WaitEnded
from corral.model.exchange import Exchanged
from corral.model.namespaces import DEFAULT_NAMESPACE
from corral.store.operations import Served
from corral.store.remote import NAMESPACE_HEADER, TOKEN_ENV, wire
from corral.store.remote.http11 import Connection

LONG_POLL_S = 30.0  # how long the server holds a claim that finds nothing
TIMEOUT_S = 30.0  # a whole call, answer included; a long poll gets LONG_POLL_S more
API = "/api/store/"


class HttpTransport:
    """The way to a `corral serve`'s store, and the remote store's driver (module doc)."""

    dialect = "http"
    exchange_on_server = False  # the server's store decides; nothing here runs a statement

    def __init__(
        self, url: str, token: str | None = None, *, namespace: str = DEFAULT_NAMESPACE
    ) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.username is not None or parts.password is not None:
            raise InvalidInput(
                "db", "an http(s):// URL without credentials: the token goes in CORRAL_TOKEN"
            )
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInput(
                "db", "http://HOST[:PORT] or https://HOST[:PORT]", f"{parts.scheme}://..."
            )
        try:
            port = parts.port
        except ValueError:
            raise InvalidInput("db", "a port from 1 to 65535", parts.netloc) from None
        self.url = urllib.parse.urlunsplit(
            (parts.scheme, parts.netloc, parts.path.rstrip("/"), "", "")
        )
        self._host, self._port, self._tls = parts.hostname, port, parts.scheme == "https"
        self._prefix = parts.path.rstrip("/")
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        # The server acts in the token's namespace, and refuses a client that asks another.
        self._headers: dict[str, str] = {NAMESPACE_HEADER: namespace}
        if token:
            if not (token.isascii() and token.isprintable()) or " " in token:
                raise InvalidInput("token", "a token as `corral token create` prints it")
            self._headers["Authorization"] = f"Bearer {token}"
        self._local = threading.local()
        self._lock = threading.Lock()
        self._connections: list[Connection] = []
        self._polling: set[Connection] = set()
        self._poll_wanted = False  # a runner listens (wake_on_work)
        self._poll_ended = False  # a runner's stop: no more waits

    # ---- what a driver answers beside the database ----------------------------------

    def migrate(self) -> list[int]:
        """Nothing: the server's store is migrated where it lives (`corral db migrate`)."""
        return []

    def schema_version(self) -> tuple[int, int]:
        raise StoreError("migrations run beside the database: run `corral db` on the server's host")

    def read(self, namespace: str = DEFAULT_NAMESPACE) -> Any:
        raise _beside_the_database()

    def write(self, namespace: str = DEFAULT_NAMESPACE) -> Any:
        raise _beside_the_database()

    def call(self, query: str, /, **params: Any) -> Any:
        raise _beside_the_database()

    def now(self) -> Any:
        raise _beside_the_database()

    def instant(self, value: Any) -> Any:
        raise _beside_the_database()

    def json(self, value: Any) -> Any:
        raise _beside_the_database()

    def wake_on_work(self, wake: threading.Event) -> Callable[[], None]:
        """A runner listens: its claims long-poll from now on (the server wakes them)."""
        self._poll_wanted = True

        def stop() -> None:
            self._poll_wanted = False

        return stop

    def wake_on_events(self, wake: threading.Event) -> None:
        """Nothing to listen to: followers page through events."""
        return None

    def leader_lock(self) -> None:
        """None: orchestrators on a remote store elect by the orchestrator row."""
        return None

    def stop_waiting(self) -> None:
        """End a long poll in flight, and make no more (a runner is stopping)."""
        with self._lock:
            self._poll_ended = True
            polling = list(self._polling)
        for conn in polling:
            _abort(conn)

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()

    # ---- calls -----------------------------------------------------------------------

    def forward(
        self,
        name: str,
        function: Callable[..., Any],
        how: Served,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        """Run served operation `name` on the server: `function`'s arguments bound by its
        signature and sent by their declared types; its result (store/operations.py)."""
        bound = _signature(function).bind(None, *args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        del values["self"]
        if how.long_poll:
            return self._exchange(name, function, values)
        return self._call(name, function, values)

    def _exchange(
        self, name: str, function: Callable[..., Any], values: dict[str, Any]
    ) -> Exchanged:
        """The exchange on the server; a runner's claim waits there for work (module doc).
        `open_run`, the runner's, stays here: what it says of a new run that differs from
        the ask's is recorded after (`runs.set_run_start`)."""
        open_run = values.pop("open_run", None)
        ask = values.get("ask")
        wait = (
            self._poll_wanted
            and ask is not None
            and ask.task_id is None
            and values.get("worker_id") is not None
        )
        done: Exchanged = self._call(name, function, values, wait_s=LONG_POLL_S if wait else 0.0)
        if open_run is not None and ask is not None and ask.run is not None:
            for held in done.held:
                assert held.run_id is not None
                start = open_run(held.task, held.token, held.run_id)
                if start != ask.run:
                    self._call(
                        "runs.set_run_start",
                        _set_run_start(),
                        {"run_id": held.run_id, "start": start},
                    )
        return done

    def _call(
        self, name: str, function: Callable[..., Any], args: dict[str, Any], *, wait_s: float = 0.0
    ) -> Any:
        types = _types(function)
        body: dict[str, Any] = {key: wire.encode(value, types[key]) for key, value in args.items()}
        if wait_s:
            body["wait_s"] = wait_s
        data = self._post(API + name, json.dumps(body).encode(), wait_s=wait_s)
        return wire.decode(data.get("result"), types["return"], "result")

    def _post(self, path: str, body: bytes, *, wait_s: float) -> dict[str, Any]:
        status, raw = self._request("POST", path, body, wait_s=wait_s)
        return _answer(status, raw, self.url)

    def _request(
        self,
        method: str,
        path: str,
        body: bytes | None,
        *,
        wait_s: float = 0.0,
        content_type: str = "application/json",
    ) -> tuple[int, bytes]:
        """One request on this thread's connection: its status and body."""
        conn = self._connection()
        polling = wait_s > 0
        if polling:
            with self._lock:
                if self._poll_ended:
                    body = _no_wait(body or b"{}")
                else:
                    self._polling.add(conn)
        conn.timeout_s = TIMEOUT_S + wait_s
        try:
            return conn.request(
                method, self._prefix + path, body, {**self._headers, "Content-Type": content_type}
            )
        except OSError as exc:
            if polling and self._poll_ended:  # stop_waiting cut it: the server is fine
                raise WaitEnded from None
            raise StoreError(f"corral serve at {self.url}: unreachable ({_reason(exc)})") from None
        finally:
            if polling:
                with self._lock:
                    self._polling.discard(conn)

    # ---- run output, copied to the server (runtime/worker/output_shipping.py) ---------

    def append_output(self, run_id: str, stream: str, offset: int, data: bytes) -> int:
        """Give the server `data`, the bytes of a run's `stream` from `offset` on; how many
        bytes of it the server holds now."""
        path = f"/api/runs/{_quoted(run_id)}/output/{_quoted(stream)}?offset={offset}"
        status, raw = self._request("POST", path, data, content_type="application/octet-stream")
        size = _answer(status, raw, self.url).get("size")
        if not isinstance(size, int):
            raise StoreError(f"corral serve at {self.url}: answered no size for run output")
        return size

    def read_output(self, run_id: str, stream: str, offset: int) -> bytes:
        """The bytes of a run's `stream` the server holds from `offset` on (a chunk)."""
        path = f"/api/runs/{_quoted(run_id)}/output/{_quoted(stream)}?offset={offset}"
        status, raw = self._request("GET", path, None)
        if status >= 300:
            _answer(status, raw, self.url)  # raises what the server said
        return raw

    def _connection(self) -> Connection:
        """This thread's connection, opened again if the server closed it while idle."""
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and _closed(conn.sock):
            conn.close()
        if conn is None:
            conn = Connection(self._host, self._port, tls=self._tls, timeout_s=TIMEOUT_S)
            self._local.conn = conn
            with self._lock:
                self._connections.append(conn)
        return conn


def _quoted(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _no_wait(body: bytes) -> bytes:
    data = json.loads(body)
    data.pop("wait_s", None)
    return json.dumps(data).encode()


def _closed(sock: socket.socket) -> bool:
    """Whether an idle keep-alive socket was closed by the server (it reads as ready)."""
    try:
        readable, _, _ = select.select([sock], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


def _abort(conn: Connection) -> None:
    """Cut a request in flight on another thread: its read fails at once."""
    sock = conn.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError | socket.timeout):
        return str(exc) if exc.args else "timed out"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return str(text)


def _answer(status: int, raw: bytes, url: str) -> dict[str, Any]:
    """The answer's JSON; the error it reports raised as corral's own."""
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise StoreError(f"corral serve at {url}: answered {status} without a corral answer")
    if status < 300:
        return data
    message = data.get("error")
    if not isinstance(message, str):
        message = f"answered {status}"
    if status in (401, 403, 413):  # the caller's token or body: exit 2, as bad input
        raise wire.error_of(
            "InvalidInput", message, {"field": "body" if status == 413 else "token"}
        )
    if status >= 500:
        raise StoreError(f"corral serve at {url}: {message}")
    details = data.get("details")
    details = {**details, "field": data.get("field")} if isinstance(details, dict) else data
    raise wire.error_of(data.get("type"), message, details)


def _beside_the_database() -> InvalidInput:
    """What cannot work remotely is the caller's choice of store, not a failing server:
    exit 2, never retried."""
    return InvalidInput(
        "db", "a local store: this runs beside the database, not through `corral serve`"
    )


@functools.cache
def _types(function: Callable[..., Any]) -> dict[str, Any]:
    """An operation's parameter and return types, resolved once."""
    return wire.hints(function)


@functools.cache
def _signature(function: Callable[..., Any]) -> inspect.Signature:
    """An operation's signature, read at first use: a command calls a few of the ~100."""
    return inspect.signature(function)


def _set_run_start() -> Callable[..., Any]:
    from corral.store.runs import Runs  # only a runner that opens runs  # noqa: PLC0415

    return Runs.set_run_start
