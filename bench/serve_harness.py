"""What the `corral serve` benchmarks share: a real server process over a throwaway store,
its tokens, its CPU and memory, and the floor server the throughput is judged against.

`served(dialect, folder)` starts `python -m corral.cli.main serve` on a free port over a
fresh SQLite file or a scratch PostgreSQL database (pg_peer.py), with a worker and an
operator token made on the store before it starts; it is up when `/healthz` answers, and
on leaving it is stopped by SIGTERM and its whole process group is killed, whatever
happened. `Server.usage()` reads the CPU seconds and RSS of the server's process tree
(psutil), so a script can difference two readings around what it measures.

The floor (`floor_server`) is a Starlette app with one POST route that reads its body and
answers a small JSON object, run by uvicorn with the options `corral serve` gives it: the
cost of the framework and the HTTP server alone, for the same requests from the same
client (`floor_post`: the remote store's own keep-alive connection code).

    .venv/bin/python bench/serve_harness.py --floor --port PORT   (what `floor_server` runs)
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import psutil

from corral.store import Store, open_store
from corral.store.remote.transport import HttpTransport
from corral.usecases.api_tokens import create_token
from measure import free_port, fresh_process_env, store_url, tail

HERE = os.path.dirname(os.path.abspath(__file__))
START_TIMEOUT_S = 30.0
FLOOR_PATH = "/api/store/floor"


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """CPU seconds (user + system) and resident memory of a process tree at one instant."""

    cpu_s: float
    rss_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Server:
    """A running server: its URL, the store behind it, its tokens and its process."""

    url: str
    db: str
    worker_token: str
    operator_token: str
    pid: int

    def usage(self) -> Usage:
        """The server process's and its children's CPU and RSS now."""
        root = psutil.Process(self.pid)
        cpu, rss = 0.0, 0
        for proc in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                times = proc.cpu_times()
                cpu += times.user + times.system
                rss += proc.memory_info().rss
        return Usage(cpu_s=cpu, rss_bytes=rss)

    def remote(self, role: str = "worker") -> Store:
        """A remote store on this server with its `role` token."""
        token = self.operator_token if role == "operator" else self.worker_token
        return open_store(self.url, token=token)

    def env(self, role: str = "worker") -> dict[str, str]:
        """The environment of a `corral` command run against this server."""
        token = self.operator_token if role == "operator" else self.worker_token
        return {**fresh_process_env(self.url), "CORRAL_TOKEN": token}


@contextmanager
def served(dialect: str, folder: str) -> Iterator[Server]:
    """`corral serve` over a fresh store of `dialect` (sqlite or postgresql), until the block
    ends; the server's log is kept in `folder` and shown if it fails to start."""
    with store_url(dialect, folder) as db:
        with open_store(db) as store:
            _, worker = create_token(store, role="worker", name="bench-worker")
            _, operator = create_token(store, role="operator", name="bench-operator")
        port = free_port()
        argv = [sys.executable, "-m", "corral.cli.main", "serve", "--port", str(port)]
        with _group(argv, fresh_process_env(db), folder, "serve") as proc:
            url = f"http://127.0.0.1:{port}"
            _wait_up(port, "/healthz", proc, os.path.join(folder, "serve.log"))
            yield Server(url=url, db=db, worker_token=worker, operator_token=operator, pid=proc.pid)


@contextmanager
def floor_server(folder: str) -> Iterator[Server]:
    """The floor: an empty-JSON POST route under uvicorn as `corral serve` runs it."""
    port = free_port()
    argv = [sys.executable, os.path.join(HERE, "serve_harness.py"), "--floor", "--port", str(port)]
    with _group(argv, dict(os.environ), folder, "floor") as proc:
        _wait_up(port, FLOOR_PATH, proc, os.path.join(folder, "floor.log"), method="POST")
        yield Server(
            url=f"http://127.0.0.1:{port}", db="", worker_token="", operator_token="", pid=proc.pid
        )


def floor_post(transport: HttpTransport, body: bytes) -> None:
    """One POST to the floor's route through the remote store's own request code (its
    thread's keep-alive connection, JSON answer read as a store call's is)."""
    transport._post(FLOOR_PATH, body, wait_s=0.0)  # the client's own code path


@contextmanager
def _group(
    argv: list[str], env: dict[str, str], folder: str, name: str
) -> Iterator[subprocess.Popen[bytes]]:
    """`argv` in a process group of its own; SIGTERM then SIGKILL to the group on leaving."""
    log_path = os.path.join(folder, f"{name}.log")
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            argv, env=env, cwd=folder, stdout=log, stderr=log, start_new_session=True
        )
    try:
        yield proc
    finally:
        _stop_group(proc)


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _wait_up(
    port: int, path: str, proc: subprocess.Popen[bytes], log: str, method: str = "GET"
) -> None:
    """Return once `path` answers 200; raise with the log's tail if the process dies or
    START_TIMEOUT_S passes."""
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _answers(port, path, method):
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the server on port {port} did not start:\n{tail(log)}")
        time.sleep(0.02)


def _answers(port: int, path: str, method: str) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        conn.request(method, path, b"{}" if method == "POST" else None)
        return conn.getresponse().status == 200
    except OSError:
        return False
    finally:
        conn.close()


def _run_floor(port: int) -> None:
    """Serve the floor app on `port` with `corral serve`'s uvicorn options, until SIGTERM."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    from corral.cli.serve_cmds import KEEP_ALIVE_S

    async def empty(request: Request) -> Response:
        await request.body()
        return Response(b'{"result":{}}\n', media_type="application/json")

    app = Starlette(routes=[Route(FLOOR_PATH, empty, methods=["POST"])])
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=port,
        access_log=False,
        log_level="warning",
        timeout_keep_alive=KEEP_ALIVE_S,
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floor", action="store_true", help="run the floor server")
    parser.add_argument("--port", type=int, default=0)
    opts = parser.parse_args()
    if opts.floor:
        _run_floor(opts.port)
