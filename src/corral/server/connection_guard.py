"""How many connections `corral serve` holds, and how long a request's head may take.

uvicorn bounds neither the time a request's head (its request line and headers) takes to
arrive nor the connections it holds below the process's descriptors: 1,100 connections
that never finished their headers left serve, under systemd's 1,024 descriptors, unable
to accept anyone (EMFILE) for as long as they stayed open (slowloris). Its own
`limit_concurrency` answers 503 only once a head has arrived, and `timeout_keep_alive`
only times the wait between requests. This protocol, uvicorn's h11 one with four bounds,
frees a slow or surplus connection's descriptor instead:

    budget      connections held at once: the descriptor limit (RLIMIT_NOFILE) less
                DESCRIPTORS_KEPT for the store, logs, run output and one batch of accepts
                (serve_cmds.BACKLOG)
    per client  a quarter of the budget per client address: one address cannot take it all
    head        a request's head must arrive whole within HEAD_S of its first byte (of the
                connection, for the first request), else the connection is closed; an idle
                kept-alive connection is `timeout_keep_alive`'s between requests, not this
    reserve     RESERVE connections beyond both bounds (RESERVE_PER_CLIENT per address),
                for `/healthz`: their head must arrive within RESERVE_HEAD_S, any other
                path is answered 503, and they close after one answer, so a monitor sees
                the server alive while it is full

A connection beyond all of it is closed as soon as it is accepted. Behind a reverse proxy
every client has the proxy's address: the per-client bound is then the proxy's, whose own
limits (and header timeouts) guard it. A TLS handshake that never ends is asyncio's to
bound (60 s): a connection is counted from its handshake's end.
"""

from __future__ import annotations

import asyncio
import enum
import resource
import weakref
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from corral.server.answers import error

DESCRIPTORS_KEPT = 256
CLIENT_SHARE = 4  # one client address may hold budget / CLIENT_SHARE connections
HEAD_S = 10.0
RESERVE = 16
RESERVE_PER_CLIENT = 2
RESERVE_HEAD_S = 2.0
HEALTHZ = "/healthz"
# With no descriptor limit, as if there were this many.
UNLIMITED_DESCRIPTORS = 65536


class Place(enum.Enum):
    """Where an admitted connection counts."""

    BUDGET = "budget"
    RESERVE = "reserve"


@dataclass
class Tally:
    """The connections one server holds, by place and by client address."""

    budget: int
    per_client: int
    held: Counter[Place] = field(default_factory=Counter)
    by_client: dict[Place, Counter[str]] = field(
        default_factory=lambda: {place: Counter() for place in Place}
    )

    def admit(self, client: str) -> Place | None:
        """The place a new connection from `client` takes, counted; None: close it."""
        if self.held[Place.BUDGET] < self.budget and self.by_client[Place.BUDGET][client] < (
            self.per_client
        ):
            place = Place.BUDGET
        elif self.held[Place.RESERVE] < RESERVE and (
            self.by_client[Place.RESERVE][client] < RESERVE_PER_CLIENT
        ):
            place = Place.RESERVE
        else:
            return None
        self.held[place] += 1
        self.by_client[place][client] += 1
        return place

    def release(self, client: str, place: Place) -> None:
        """A connection admitted at `place` has closed."""
        self.held[place] -= 1
        counts = self.by_client[place]
        counts[client] -= 1
        if counts[client] <= 0:
            del counts[client]


def tally_for(descriptors: int) -> Tally:
    """The bounds of a process allowed `descriptors` open files."""
    budget = max(1, descriptors - min(DESCRIPTORS_KEPT, descriptors // 2))
    return Tally(budget=budget, per_client=max(1, budget // CLIENT_SHARE))


def descriptor_limit() -> int:
    """This process's soft RLIMIT_NOFILE."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return UNLIMITED_DESCRIPTORS if soft == resource.RLIM_INFINITY else int(soft)


# One tally per uvicorn server (its ServerState), however many connections it makes.
_TALLIES: weakref.WeakKeyDictionary[ServerState, Tally] = weakref.WeakKeyDictionary()


class GuardedH11(H11Protocol):
    """uvicorn's HTTP/1.1 protocol under the bounds of the module doc: `http=` of uvicorn's
    Config (serve_cmds.py)."""

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        if server_state not in _TALLIES:
            _TALLIES[server_state] = tally_for(descriptor_limit())
        self.tally = _TALLIES[server_state]
        self.client_host = ""
        self.place: Place | None = None
        self.head_timer: asyncio.TimerHandle | None = None
        self.head_cycle: object = None  # the request the timer's head would follow

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        peer = transport.get_extra_info("peername")
        self.client_host = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        self.place = self.tally.admit(self.client_host)
        if self.place is None:
            transport.abort()  # its descriptor is freed now, not when a head would time out
            return
        super().connection_made(transport)
        if self.place is Place.RESERVE:
            self.app = _healthz_only(self.app)
        self._time_the_head()

    def data_received(self, data: bytes) -> None:
        if self.head_timer is None and self._between_requests():
            self._time_the_head()  # the first byte of the next request's head
        super().data_received(data)
        if self.head_timer is not None and self.cycle is not self.head_cycle:
            self._stop_timing_the_head()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.place is Place.RESERVE:
            self.transport.close()  # one answer: the reserve is for a monitor's probe
        elif self.head_timer is None and self._between_requests() and self.conn.trailing_data[0]:
            self._time_the_head()  # a head that came early (pipelined) and is not whole yet

    def connection_lost(self, exc: Exception | None) -> None:
        if self.place is None:
            return  # never admitted: uvicorn's side never knew it
        self.tally.release(self.client_host, self.place)
        self.place = None
        if self.head_timer is not None:
            self._stop_timing_the_head()  # the connection is gone: nothing left to time
        super().connection_lost(exc)

    def _time_the_head(self) -> None:
        """Close the connection unless a new request's head has arrived in time."""
        head_s = RESERVE_HEAD_S if self.place is Place.RESERVE else HEAD_S
        self.head_cycle = self.cycle
        self.head_timer = self.loop.call_later(head_s, self._head_late)

    def _between_requests(self) -> bool:
        """Whether no request is in progress: the next bytes begin a head."""
        return self.cycle is None or self.cycle.response_complete

    def _stop_timing_the_head(self) -> None:
        assert self.head_timer is not None
        self.head_timer.cancel()
        self.head_timer = None

    def _head_late(self) -> None:
        self.head_timer = None
        if self.cycle is self.head_cycle and not self.transport.is_closing():
            self.transport.close()


def _healthz_only(app: Any) -> Any:
    """`app` for `/healthz` alone; any other path is 503 (a connection of the reserve)."""

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] != HEALTHZ:
            busy = error(503, "corral serve is at its connection limit: try again shortly")
            await busy(scope, receive, send)
            return
        await app(scope, receive, send)

    return guarded
