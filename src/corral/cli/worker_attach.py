"""`corral worker attach NAME|ID`: a worker's live output (corral.runtime.attach).

Imported by `worker attach` alone. The transcripts go to stdout as they are written, byte
for byte; a line naming each run as it begins goes to stderr, so a pipe reads the output
alone. SIGINT (Ctrl-C) and SIGTERM end it with exit 0, as does the worker going offline
or dead once its last run is shown. A name is the newest worker of that name that is
not gone, else the newest of that name.
"""

from __future__ import annotations

import signal
import sys
from contextlib import suppress
from types import FrameType

from corral.cli.context import Context
from corral.foundation.clock import SystemClock
from corral.foundation.errors import NotFound
from corral.foundation.ids import WORKER_PREFIX
from corral.model.states import GONE
from corral.model.workers import Worker
from corral.runtime import signals
from corral.runtime.attach import Attachment, LocalOutput, Output, RemoteOutput
from corral.store import Store

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def attach(ctx: Context) -> int:
    """Follow the worker's runs' transcripts until a stop signal or its end; 0."""
    worker = resolve(ctx.store, ctx.args.worker)
    attachment = Attachment(
        ctx.store, worker.id, _output(ctx), write=_write, note=_note, clock=SystemClock()
    )
    ctx.long_running()  # every argument checked: from here on it follows

    def on_signal(signum: int, frame: FrameType | None) -> None:
        attachment.stop()

    with signals.relayed(_STOP_SIGNALS, on_signal):
        _note(f"attached to worker {worker.id} ({worker.name}), {worker.status}")
        attachment.run()
    return 0


def resolve(store: Store, ident: str) -> Worker:
    """The worker of id `ident`, else the newest worker named `ident` that is not gone
    (else the newest of that name); NotFound when none is."""
    if ident.startswith(WORKER_PREFIX):
        with suppress(NotFound):  # a worker may be named like an id
            return store.workers.get_worker(ident)
    named = [w for w in store.workers.list_workers() if w.name == ident]
    if not named:
        raise NotFound("worker", ident)
    return max(named, key=lambda w: (w.status not in GONE, w.seq))


def _output(ctx: Context) -> Output:
    if ctx.store.dialect == "http":
        from corral.store.remote.transport import HttpTransport  # remote only

        transport = ctx.store.transport
        assert isinstance(transport, HttpTransport)
        return RemoteOutput(transport)
    return LocalOutput(ctx.db)


def _write(chunk: bytes) -> None:
    sys.stdout.buffer.write(chunk)
    sys.stdout.buffer.flush()


def _note(line: str) -> None:
    sys.stderr.write(f"corral: {line}\n")
    sys.stderr.flush()
