"""Which requests `corral serve` answers at all: a Host it may be reached by, and no write
another site's page sent. Both checks run on every request (API, dashboard, `/healthz`)
before a route reads its body or the store.

DNS rebinding. While no usable token exists the server has no authentication: a request
from the loopback is an operator (dashboard/visitors.py). A web page the user visits can
point a name of its own (rebind.evil.example) at 127.0.0.1 and then talk to the server
as a same-origin page of that name, reading its forms and posting them. So, without a
token, only loopback names are served, as Jupyter (`local_hostnames`) and Vite
(`server.allowedHosts`) do: `localhost` and `*.localhost` (RFC 6761: they are the
loopback, no one else may own them), 127.0.0.0/8 and [::1], at any port, plus the names
of `[server] allowed_hosts`; any other Host is 403 with one line. With a token, every
request needs a bearer token or a session cookie, which no rebinding page holds (a
cookie belongs to the name it was set for), and serve may sit behind any name. That a
token exists is trusted for `[server] auth_cache` without a store read, as tokens are
(api_token_cache.py); a request whose Host was not a known one is marked
(`scope["state"]["foreign_host"]`), so that the dashboard never lets it in as the
loopback's operator in the moment after the last token is revoked.

Cross-site writes. A write (any method but GET, HEAD and OPTIONS) that a browser marks as
sent by another site's page, `Sec-Fetch-Site: cross-site` or `same-site`, or an `Origin`
that is not this server's, is 403 on every route. A browser cannot add `Authorization`
to a cross-site request without CORS (which serve never grants), so the API's bearer
tokens were safe already; this also covers a route that would ever accept a cookie. The
CLI and remote runners send neither header. The dashboard asks more of its writes
(dashboard/csrf.py): its CSRF token, and an `Origin` or `Sec-Fetch-Site` present.
"""

from __future__ import annotations

import ipaddress
import time
from collections.abc import Callable

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from corral.foundation.errors import CorralError
from corral.server.answers import error, of_error

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# The values of Sec-Fetch-Site a write may carry: from this origin, or typed by the user.
OWN_FETCH_SITES = frozenset({"same-origin", "none"})


class HostGuard:
    """ASGI middleware: refuse (403) a foreign Host while no token exists, and a write that
    a browser sent from another site; pass everything else to `app` untouched."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        tokens_exist: Callable[[], bool],
        allowed_hosts: tuple[str, ...],
        trust_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.app = app
        self.tokens_exist = tokens_exist  # reads the store: asked only of a foreign Host
        self.allowed_hosts = frozenset(name.lower().rstrip(".") for name in allowed_hosts)
        self.trust_s = trust_s
        self.clock = clock
        self.tokens_seen_at: float | None = None  # when tokens_exist last said yes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                refusal = await self._refusal(scope)
            except CorralError as exc:  # the store, asked whether a token exists
                await of_error(exc)(scope, receive, send)
                return
            if refusal is not None:
                await error(403, refusal)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    async def _refusal(self, scope: Scope) -> str | None:
        """Why the request is refused, or None."""
        headers = Headers(scope=scope)
        host = headers.get("host", "")
        if scope["method"] not in SAFE_METHODS:
            site = headers.get("sec-fetch-site")
            if site is not None and site not in OWN_FETCH_SITES:
                return f"a write from another site's page is refused (Sec-Fetch-Site: {site[:40]})"
            origin = headers.get("origin")
            if origin is not None and origin != own_origin(scope, host):
                return f"a write from another site's page is refused (Origin: {origin[:100]})"
        if self._known(host_name(host)):
            return None
        scope.setdefault("state", {})["foreign_host"] = True
        if await self._tokens_exist():
            return None
        return (
            f"Host {host[:100]!r} is not served while no token exists: use localhost or "
            "127.0.0.1, or name it in [server] allowed_hosts"
        )

    async def _tokens_exist(self) -> bool:
        """Whether a usable token exists: read from the store (on a worker thread), unless
        a read said so less than `trust_s` ago."""
        now = self.clock()
        if self.tokens_seen_at is not None and now - self.tokens_seen_at < self.trust_s:
            return True
        found = await run_in_threadpool(self.tokens_exist)
        self.tokens_seen_at = now if found else None
        return found

    def _known(self, name: str) -> bool:
        """Whether `name` is a loopback name or one of `allowed_hosts`."""
        return name in self.allowed_hosts or is_loopback_name(name)


def own_origin(scope: Scope, host: str) -> str:
    """This server's origin as the request names it: its scheme and its Host."""
    return f"{scope.get('scheme', 'http')}://{host}"


def host_name(host: str) -> str:
    """The name of a Host header without its port, lower case: `[::1]:8787` is `::1`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def is_loopback_name(name: str) -> bool:
    """Whether `name` can only ever mean this host: localhost, *.localhost, a loopback IP."""
    name = name.rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
