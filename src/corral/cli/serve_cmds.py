"""`corral serve`: the HTTP API (src/corral/server) on this host's store.

It refuses to listen anywhere but loopback until a token exists (`corral token create`),
so that a store is never opened to the network unguarded; `--certfile`/`--keyfile` serve
HTTPS, or put it behind a reverse proxy that does. The server stack (Starlette, uvicorn)
is the optional extra `corral[server]`, imported here only. Connections are bounded by
server/connection_guard.py (slowloris), requests by server/host_guard.py.
"""

from __future__ import annotations

import ipaddress
import os
import signal
import sys
from types import FrameType
from typing import Any

from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.foundation.errors import InvalidInput
from corral.runtime import signals

DEFAULT_PORT = 8787
# Longer than a remote runner's heartbeat interval, so its connection is kept between beats.
KEEP_ALIVE_S = 75
# How long a stopping server waits for requests in flight; with --workers, its processes
# cannot end their long polls first, so this is what bounds a stop.
GRACEFUL_S = 5
MAX_WORKERS = 64
# Connections accepted in one go (uvicorn's default is 2,048): what connection_guard.py
# keeps descriptors for beyond the connections it holds.
BACKLOG = 128
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def cmd_serve(ctx: Context) -> int:
    """Serve the API until SIGINT or SIGTERM; exit 0 then."""
    a = ctx.args
    if not 0 < a.port < 65536:
        raise InvalidInput("port", "a port from 1 to 65535", a.port)
    if not 1 <= a.workers <= MAX_WORKERS:
        raise InvalidInput("workers", f"a whole number from 1 to {MAX_WORKERS}", a.workers)
    if bool(a.certfile) != bool(a.keyfile):
        raise InvalidInput("certfile", "both --certfile and --keyfile, or neither")
    if ctx.store.dialect == "http":
        raise InvalidInput("db", "a SQLite or PostgreSQL store: serve runs beside its database")
    if not _loopback(a.host) and not ctx.store.api_tokens.any_usable_token():
        raise InvalidInput(
            "host",
            "a loopback address (127.0.0.1, ::1, localhost) until a token exists "
            "(corral token create --role operator)",
            a.host,
        )
    try:
        import uvicorn  # the server stack, for `serve` alone

        from corral.server.app import create_app  # imports Starlette
        from corral.server.connection_guard import GuardedH11
    except ImportError as exc:
        extra = "the server extra: pip install 'corral[server]'"
        raise InvalidInput("serve", extra, str(exc)) from None
    ctx.long_running()  # every flag checked: from here on it serves
    ctx.keep_state_out_of_git()  # where shipped run output goes
    scheme = "https" if a.certfile else "http"
    sys.stderr.write(f"corral serve: listening on {scheme}://{a.host}:{a.port}\n")
    sys.stderr.flush()
    options: dict[str, Any] = {
        "host": a.host,
        "port": a.port,
        "ssl_certfile": a.certfile,
        "ssl_keyfile": a.keyfile,
        "access_log": False,
        "log_level": "warning",
        "timeout_keep_alive": KEEP_ALIVE_S,
        "timeout_graceful_shutdown": GRACEFUL_S,
        # Bounds on a request head's time and on connections, per client and in all.
        "http": GuardedH11,
        "backlog": BACKLOG,
    }
    if a.workers > 1:
        # Each process opens the store itself; they share one listening socket (made by
        # uvicorn's supervisor) and wake each other's waiting claims
        # through the store (PostgreSQL NOTIFY, SQLite's commit counter).
        os.environ["CORRAL_DB"] = ctx.db
        with signals.handled(_STOP_SIGNALS, _stopped):
            uvicorn.run(
                "corral.server.app:from_environment", factory=True, workers=a.workers, **options
            )
        return 0
    app = create_app(ctx.store, ctx.settings)

    class Server(uvicorn.Server):
        """uvicorn's server, whose shutdown first ends the claims waiting for work: it
        waits for open requests, and a long poll would hold it up to 30 s."""

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            app.state.work_signal.stop()
            super().handle_exit(sig, frame)

    # uvicorn shuts down gracefully on SIGINT/SIGTERM, then raises the signal again for
    # the handler it found: this one ignores it, so a stop is exit 0, as documented.
    with signals.handled(_STOP_SIGNALS, _stopped):
        Server(uvicorn.Config(app, **options)).run()
    return 0


def _stopped(signum: int, frame: FrameType | None) -> None:
    """The stop signal uvicorn raises again once it has shut down: already handled."""


def _loopback(host: str) -> bool:
    """Whether `host` is a loopback address (names other than localhost are not)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


COMMANDS = (
    Command(
        "serve",
        cmd_serve,
        "serve the HTTP API on this store",
        Arg("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"),
        Arg("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"),
        Arg("--certfile", metavar="FILE", help="serve HTTPS with this certificate"),
        Arg("--keyfile", metavar="FILE", help="and this private key"),
        Arg("--workers", type=int, default=1, metavar="N", help="server processes (default 1)"),
    ),
)
