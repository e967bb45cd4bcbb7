"""A store behind a real `corral serve` app on loopback, for the conformance suite over HTTP.

The server (Starlette under uvicorn, as `corral serve` runs it) runs on a thread of the
test process over a local store on the test's fake clock, so tests that move the clock
move the server's; the test talks to it only through a remote store (`open_store(url)`),
over a real socket.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable

import pytest

from corral import Settings, Store
from corral.store import open_store
from corral.usecases.api_tokens import create_token

# The local store behind tests/store's `store` fixture over HTTP, in the test's stash:
# where a test makes the tokens of another namespace.
SERVED_LOCAL = pytest.StashKey[Store]()


class Served:
    """A running server over `local`, and remote stores on it with tokens of a role."""

    def __init__(self, local: Store, settings: Settings | None = None) -> None:
        import uvicorn

        from corral.server.app import create_app

        self.local = local
        self.app = create_app(local, settings or Settings())
        config = uvicorn.Config(
            self.app, host="127.0.0.1", port=0, log_level="warning", lifespan="on"
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run, name="served", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 10
        while not self._server.started:
            assert self._thread.is_alive() and time.monotonic() < deadline, (
                "the server did not start"
            )
            time.sleep(0.005)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"

    def remote(self, role: str = "operator", queues: tuple[str, ...] = ()) -> Store:
        """A remote store on this server, with a new token of `role`."""
        _, secret = create_token(
            self.local, role=role, queues=queues, name=f"served-{role}-{secrets.token_hex(3)}"
        )
        return open_store(self.url, token=secret)

    def stop(self) -> None:
        self.app.state.work_signal.stop()
        self._server.should_exit = True
        self._thread.join(timeout=10)
        assert not self._thread.is_alive(), "the server did not stop"


def serve(local: Store, settings: Settings | None = None) -> tuple[Store, Callable[[], None]]:
    """A remote store over `local` with an admin's token (every operation a local store
    has, as the conformance suite needs), and how to stop it all (the local store too)."""
    served = Served(local, settings)
    remote = served.remote("admin")

    def stop() -> None:
        remote.close()
        served.stop()
        local.close()

    return remote, stop
