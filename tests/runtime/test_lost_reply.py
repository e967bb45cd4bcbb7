"""A claim whose reply is lost after COMMIT: the runner adopts it instead of leaving it
orphaned. Real PostgreSQL, a real runner process, and a TCP proxy between them that lets
one exchange commit, then drops the connection before its answer reaches the runner."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import CORRAL
from tests.runtime.conftest import wait_until

from corral import EventFilter, NewTask, TaskStatus, enqueue, open_store

MARKER = b"lost-reply-marker"  # a task title: the proxy cuts the answer that carries it
READY = b"Z\x00\x00\x00\x05"  # ReadyForQuery, then the transaction status: I, T or E


class CuttingProxy:
    """Forwards connections to the server; once armed, the first answer that carries
    MARKER is held back, and the connection is closed once the server is idle again
    (its transaction committed): the client never learns what it did."""

    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.armed = threading.Event()
        self.cut = threading.Event()
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            threading.Thread(target=self._pump, args=(client, server), daemon=True).start()

    def _pump(self, client: socket.socket, server: socket.socket) -> None:
        held: bytearray | None = None  # the server's answer held back since MARKER
        with client, server:
            while not self._stop.is_set():
                readable, _, _ = select.select([client, server], [], [], 0.2)
                for sock in readable:
                    data = sock.recv(65536)
                    if not data:
                        return
                    if sock is client:
                        server.sendall(data)
                    elif held is not None or (self.armed.is_set() and MARKER in data):
                        self.armed.clear()
                        held = bytearray(data) if held is None else held + data
                        held = self._release(client, held)
                        if held is None:
                            self.cut.set()  # committed, and the client never heard it
                            return
                    else:
                        client.sendall(data)

    @staticmethod
    def _release(client: socket.socket, held: bytearray) -> bytearray | None:
        """Forward what may go of `held`: up to the end of a statement inside BEGIN, so
        the client sends its COMMIT. None once the server says it is idle: committed."""
        while True:
            at = held.find(READY)
            if at < 0 or len(held) < at + 6:
                return held
            status, end = held[at + 5 : at + 6], at + 6
            if status == b"I":
                return None
            client.sendall(bytes(held[:end]))
            del held[:end]

    def close(self) -> None:
        """Stop accepting and forwarding."""
        self._stop.set()
        self.listener.close()


@pytest.fixture
def proxy() -> Iterator[CuttingProxy]:
    """A cutting proxy to the test server."""
    cutting = CuttingProxy(("127.0.0.1", 5432))
    yield cutting
    cutting.close()


def test_a_claim_whose_reply_was_lost_is_adopted_and_run_once(
    pg_url: str, proxy: CuttingProxy, tmp_path: Path
) -> None:
    """The exchange that claimed a task commits, then the runner's connection drops before
    the answer: the runner adopts that claim on its next exchange, runs the task once, and
    goes on to the next tasks (it is not left at capacity)."""
    assert ":5432/" in pg_url
    with open_store(pg_url) as store:
        lost = enqueue(store, NewTask(title=MARKER.decode(), priority=10)).id
        others = [enqueue(store, NewTask(title=f"task {n}")).id for n in range(2)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    through = pg_url.replace(":5432/", f":{proxy.port}/")
    env["CORRAL_DB"] = f"{through}&sslmode=disable&gssencmode=disable"
    proxy.armed.set()
    log = tmp_path / "w1.log"
    with open(log, "wb") as out:
        runner = subprocess.Popen(
            [CORRAL, "worker", "start", "--name", "w1", "--exec", "true"],
            env=env,
            cwd=tmp_path,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        assert proxy.cut.wait(30), log.read_text()
        with open_store(pg_url) as store:

            def all_done() -> bool:
                return all(
                    store.tasks.get_task(t).status is TaskStatus.DONE for t in [lost, *others]
                )

            wait_until(all_done, 30, interval_s=0.05)
            events = store.events.list_events(EventFilter(task_id=lost, limit=100))
            runs = store.runs.list_runs(task_id=lost)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(runner.pid, signal.SIGTERM)
        code = runner.wait(30)
    assert 0 == code, log.read_text()
    assert "claim.adopted" in log.read_text()
    assert 1 == [e.name for e in events].count("task.claimed")
    assert ["done"] == [r.outcome for r in runs]
