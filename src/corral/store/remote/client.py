"""A store reached over HTTP: `CORRAL_DB=https://host:8787` with `CORRAL_TOKEN=corral_...`.

`RemoteStore` is a `Store` whose operations run on `corral serve` (methods.py says which
travel and who may call them): each call is one POST /api/store/NAME carrying the
operation's arguments as JSON (wire.py), answered with its result or its error, raised
here as the same class with the same line, so every command keeps its exit code. The use
cases run here as they do beside a local store; every state change is still one
transaction with its compare-and-set, on the server's store.

The client is http11.py's, one keep-alive connection per thread (a runner's slots and
heartbeat each have their own), checked before reuse: a connection the server closed while
idle is opened again instead of failing a request it never read.
Unreachable, or a 5xx: `StoreError`, exit 3, which a runner already retries with backoff
and jitter; a 4xx is never retried.

A runner's claims long-poll: once `wake_on_work` says a runner is listening, an exchange
that asks for work and finds none is held by the server up to LONG_POLL_S while it waits
for a task to become ready (the store's notification), and answered `waited`, so the
runner asks again at once instead of sleeping. `stop_waiting` (a runner's stop) ends a
wait in flight and every later one.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import select
import socket
import threading
import urllib.parse
from collections.abc import Callable, Sequence
from typing import Any

from corral.errors import InvalidInput, StoreError
from corral.model.batches import ClaimAsk, Exchanged, Report, RunStart
from corral.model.namespaces import DEFAULT_NAMESPACE
from corral.store import Store
from corral.store.remote import NAMESPACE_HEADER, TOKEN_ENV, methods, wire
from corral.store.remote.http11 import Connection

LONG_POLL_S = 30.0  # how long the server holds a claim that finds nothing
TIMEOUT_S = 30.0  # any other call; a long poll gets LONG_POLL_S more
API = "/api/store/"


class RemoteStore(Store):
    """The store behind a `corral serve`, through its HTTP API."""

    long_polls = True

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
        self._url = urllib.parse.urlunsplit(
            (parts.scheme, parts.netloc, parts.path.rstrip("/"), "", "")
        )
        self._host, self._port, self._tls = parts.hostname, port, parts.scheme == "https"
        self._prefix = parts.path.rstrip("/")
        token = token if token is not None else os.environ.get(TOKEN_ENV)
        # The server acts in the token's namespace, and refuses a client that asks another.
        self._namespace = namespace
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

    @property
    def namespace(self) -> str:
        """The namespace the server is asked to act in (it must be the token's)."""
        return self._namespace

    def in_namespace(self, namespace: str) -> Store:
        """Not across a server: a token acts in one namespace."""
        if namespace != self._namespace:
            expected = f"{self._namespace!r}, the namespace this client acts in"
            raise InvalidInput("--namespace", expected, namespace)
        return self

    @property
    def url(self) -> str:
        """The server's URL (it never holds a secret: the token is not part of it)."""
        return self._url

    @property
    def dialect(self) -> str:
        return "http"

    # ---- the operations that do not travel ------------------------------------------

    def migrate(self) -> list[int]:
        """Nothing: the server's store is migrated where it lives (`corral db migrate`)."""
        return []

    def pending_migrations(self) -> list[tuple[int, str]]:
        raise StoreError("migrations run beside the database: run `corral db` on the server's host")

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

    # ---- the exchange: claims that long-poll, runs described after -------------------

    def exchange(
        self,
        worker_id: str | None,
        *,
        reports: Sequence[Report] = (),
        ask: ClaimAsk | None = None,
        open_run: Callable[[Any, int, str], RunStart] | None = None,
        return_tasks: bool = False,
    ) -> Exchanged:
        """Store.exchange on the server; a runner's claim waits there for work (module doc).
        What `open_run` says of a new run that differs from the ask's is recorded after."""
        args = {
            "worker_id": worker_id,
            "reports": list(reports),
            "ask": ask,
            "return_tasks": return_tasks,
        }
        wait = (
            self._poll_wanted and ask is not None and ask.task_id is None and worker_id is not None
        )
        done: Exchanged = self._call("exchange", args, wait_s=LONG_POLL_S if wait else 0.0)
        if open_run is not None and ask is not None and ask.run is not None:
            for held in done.held:
                assert held.run_id is not None
                start = open_run(held.task, held.token, held.run_id)
                if start != ask.run:
                    self.set_run_start(held.run_id, start)
        return done

    # ---- calls -----------------------------------------------------------------------

    def _call(self, name: str, args: dict[str, Any], *, wait_s: float = 0.0) -> Any:
        types = _types(name)
        body: dict[str, Any] = {key: wire.encode(value, types[key]) for key, value in args.items()}
        if wait_s:
            body["wait_s"] = wait_s
        data = self._post(API + name, json.dumps(body).encode(), wait_s=wait_s)
        return wire.decode(data.get("result"), types["return"], "result")

    def _post(self, path: str, body: bytes, *, wait_s: float) -> dict[str, Any]:
        status, raw = self._request("POST", path, body, wait_s=wait_s)
        return _answer(status, raw, self._url)

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
        conn.timeout = TIMEOUT_S + wait_s
        try:
            return conn.request(
                method, self._prefix + path, body, {**self._headers, "Content-Type": content_type}
            )
        except OSError as exc:
            raise StoreError(f"corral serve at {self._url}: unreachable ({_reason(exc)})") from None
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
        size = _answer(status, raw, self._url).get("size")
        if not isinstance(size, int):
            raise StoreError(f"corral serve at {self._url}: answered no size for run output")
        return size

    def read_output(self, run_id: str, stream: str, offset: int) -> bytes:
        """The bytes of a run's `stream` the server holds from `offset` on (a chunk)."""
        path = f"/api/runs/{_quoted(run_id)}/output/{_quoted(stream)}?offset={offset}"
        status, raw = self._request("GET", path, None)
        if status >= 300:
            _answer(status, raw, self._url)  # raises what the server said
        return raw

    def _connection(self) -> Connection:
        """This thread's connection, opened again if the server closed it while idle."""
        conn: Connection | None = getattr(self._local, "conn", None)
        if conn is not None and conn.sock is not None and _closed(conn.sock):
            conn.close()
        if conn is None:
            conn = Connection(self._host, self._port, tls=self._tls, timeout=TIMEOUT_S)
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
        return "timed out"
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


_TYPES: dict[str, dict[str, Any]] = {}


def _types(name: str) -> dict[str, Any]:
    """Operation `name`'s parameter and return types, resolved once."""
    found = _TYPES.get(name)
    if found is None:
        found = _TYPES[name] = wire.hints(getattr(Store, name))
    return found


_SIGNATURES: dict[str, inspect.Signature] = {}


def _remote(name: str) -> Callable[..., Any]:
    def call(self: RemoteStore, *args: Any, **kwargs: Any) -> Any:
        signature = _SIGNATURES.get(name)
        if signature is None:  # read at first use: a command calls a few of the ~80
            signature = _SIGNATURES[name] = inspect.signature(getattr(Store, name))
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        del values["self"]
        return self._call(name, values)

    call.__name__ = name
    call.__doc__ = f"Store.{name}, run by the server."
    return call


for _name in sorted(methods.READS | set(methods.WORKER_OWNS) | methods.OPERATES):
    if _name != "exchange":
        setattr(RemoteStore, _name, _remote(_name))
