"""A run's output over HTTP: remote runners send it as it is written, anyone may read it.

POST /api/runs/{run_id}/output/{stream}?offset=N   worker (its own runs) or operator
    The body is bytes of the run's `stream` (transcript or stderr) from `offset` on. The
    server keeps its copy in its runs folder (store/location.py `shipped_output`): bytes
    it holds already are not written again (a copy sent twice, its answer lost), and a
    chunk from past the end of what it holds is not written at all. Answers `{"size": N}`,
    how many bytes it holds now: the sender goes on from there.
GET  /api/runs/{run_id}/output/{stream}?offset=N    viewer
    The bytes from `offset` on, at most CHUNK_BYTES (ask again from where they end); the
    server's copy for a remote run, else the file the run record names, if it lies in
    the server's runs folder. `corral logs [--follow]` and `corral worker attach` on a
    remote store read this.
"""

from __future__ import annotations

import os

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.foundation import filemodes
from corral.foundation.errors import InvalidInput, NotFound
from corral.model.api_tokens import ApiToken, Role
from corral.server.answers import answer
from corral.server.auth import Denied, require
from corral.server.context import store_of
from corral.server.ownership import own_worker
from corral.server.paths import path_id
from corral.store import Store
from corral.store.location import OUTPUT_SUFFIX, is_inside, runs_dir, shipped_output

CHUNK_BYTES = 1 << 20


async def append(request: Request) -> Response:
    """Write a chunk of a remote run's output into the server's copy."""
    declared = request.headers.get("content-length", "")
    if not declared.isdigit() or int(declared) > CHUNK_BYTES:
        raise Denied(413, f"a body of at most {CHUNK_BYTES} bytes, with its Content-Length")
    data = await request.body()
    if len(data) > CHUNK_BYTES:
        raise Denied(413, f"a body of at most {CHUNK_BYTES} bytes")
    size: int = await run_in_threadpool(_append, request, data)
    return answer({"size": size})


def _append(request: Request, data: bytes) -> int:
    store = store_of(request)
    token = require(request, store)
    run_id, stream, offset = _target(request)
    _own_run(store, token, run_id)
    path = shipped_output(store.url, run_id, stream)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd = filemodes.open_file(path, os.O_RDWR)
    try:
        size = os.fstat(fd).st_size
        if offset > size:  # a gap: the sender goes back to `size`
            return size
        new = data[size - offset :]
        if new:
            os.pwrite(fd, new, size)
        return max(size, offset + len(data))
    finally:
        os.close(fd)


async def read(request: Request) -> Response:
    """A chunk of a run's output from an offset."""
    data: bytes = await run_in_threadpool(_read, request)
    return Response(data, media_type="application/octet-stream")


def _read(request: Request) -> bytes:
    store = store_of(request)
    require(request, store)
    run_id, stream, offset = _target(request)
    path = output_path(store, run_id, stream)
    try:
        with open(path, "rb") as handle:
            handle.seek(offset, os.SEEK_SET)
            return handle.read(CHUNK_BYTES)
    except FileNotFoundError:
        raise NotFound(f"{stream} of run", run_id) from None


def output_path(store: Store, run_id: str, stream: str) -> str:
    """Where the server reads run `run_id`'s `stream` from: its copy of a remote run's
    output, else the file the run record names if it lies in the server's runs folder;
    NotFound otherwise (the dashboard's transcripts read it too)."""
    run = store.runs.get_run(run_id)
    path = shipped_output(store.url, run_id, stream)
    if os.path.exists(path):
        return path
    recorded = run.transcript_path if stream == "transcript" else run.stderr_path
    if recorded is None or not is_inside(recorded, runs_dir(store.url)):
        raise NotFound(f"{stream} of run", run_id)
    return recorded


def _target(request: Request) -> tuple[str, str, int]:
    """(run id, stream, offset) of the request; InvalidInput naming what is not one."""
    run_id, stream = path_id(request, "run_id", "run"), request.path_params["stream"]
    if stream not in OUTPUT_SUFFIX:
        raise InvalidInput("stream", "transcript or stderr", stream)
    raw = request.query_params.get("offset", "0")
    if not raw.isascii() or not raw.isdigit() or len(raw) > 15:
        raise InvalidInput("offset", "a whole number of bytes from 0", raw)
    shipped_output("", run_id, stream)  # refuses a run id that is no file name
    return run_id, stream, int(raw)


def _own_run(store: Store, token: ApiToken, run_id: str) -> None:
    run = store.runs.get_run(run_id)
    if token.role == Role.WORKER:
        own_worker(store, token, run.worker_id)


ROUTES = [
    Route("/api/runs/{run_id}/output/{stream}", append, methods=["POST"]),
    Route("/api/runs/{run_id}/output/{stream}", read, methods=["GET"]),
]
