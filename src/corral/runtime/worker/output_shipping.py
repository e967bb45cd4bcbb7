"""A remote runner's run output, copied to the server as it is written.

A runner whose store is a `corral serve` (store/remote/) writes each run's transcript and
stderr to its own disk as any runner does, and this thread copies what is new of each to
the server every SHIP_EVERY_S (POST /api/runs/ID/output/STREAM?offset=N), so `corral logs
--follow` works from any host while the run goes on. Each copy says the offset it starts
at, so a copy sent twice (its answer lost) is written once, and one the server cannot
place is answered with what it holds. A server out of reach is asked again at the next
tick: nothing is dropped while the runner lives, and a run's last bytes are sent when it
ends (`finish`), before its report.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass

from corral.foundation.clock import Clock
from corral.foundation.errors import CorralError, StoreError
from corral.foundation.logs import event
from corral.foundation.threads import ThreadService
from corral.store.remote.transport import HttpTransport

SHIP_EVERY_S = 0.25
CHUNK_BYTES = 512 * 1024
STREAMS = ("transcript", "stderr")


@dataclass
class _Shipped:
    """One run's files and how much of each the server holds."""

    paths: dict[str, str]
    offsets: dict[str, int]
    finished: bool = False


class OutputShipper(ThreadService):
    """Copies the output of this runner's runs to the server that holds its store."""

    def __init__(self, transport: HttpTransport, *, clock: Clock, log: logging.Logger) -> None:
        super().__init__("corral-output")
        self._transport, self._clock, self._log = transport, clock, log
        self._lock = threading.Lock()
        self._runs: dict[str, _Shipped] = {}

    def watch(self, run_id: str, *, transcript_path: str | None, stderr_path: str | None) -> None:
        """Start copying a run's output."""
        paths = {s: p for s, p in zip(STREAMS, (transcript_path, stderr_path), strict=True) if p}
        with self._lock:
            self._runs[run_id] = _Shipped(paths=paths, offsets=dict.fromkeys(paths, 0))

    def finish(self, run_id: str) -> None:
        """The run ended: send the rest now; what cannot be sent goes at the next ticks."""
        with self._lock:
            shipped = self._runs.get(run_id)
            if shipped is not None:
                shipped.finished = True
        if shipped is not None:
            self._ship(run_id, shipped)

    def stop(self) -> None:
        """A last attempt for every run, then stop."""
        super().stop()
        for run_id, shipped in self._watched():
            self._ship(run_id, shipped)

    def _run(self) -> None:
        while not self.stopping.wait(SHIP_EVERY_S):
            for run_id, shipped in self._watched():
                self._ship(run_id, shipped)

    def _watched(self) -> list[tuple[str, _Shipped]]:
        with self._lock:
            return list(self._runs.items())

    def _ship(self, run_id: str, shipped: _Shipped) -> None:
        """Send what is new of each file; forget the run once it ended and all is sent."""
        try:
            whole = all(self._ship_file(run_id, shipped, stream) for stream in shipped.paths)
        except StoreError:
            return  # the server is out of reach: the next tick tries again
        except CorralError as exc:  # refused: the run is not this runner's to copy
            event(self._log, "output.refused", logging.WARNING, run_id=run_id, error=exc.message)
            whole = True
        if whole and shipped.finished:
            with self._lock:
                self._runs.pop(run_id, None)

    def _ship_file(self, run_id: str, shipped: _Shipped, stream: str) -> bool:
        """Send the file's new bytes, a chunk at a time; whether all of it is sent."""
        path = shipped.paths[stream]
        while True:
            offset = shipped.offsets[stream]
            try:
                with open(path, "rb") as handle:
                    handle.seek(offset, os.SEEK_SET)
                    chunk = handle.read(CHUNK_BYTES)
            except FileNotFoundError:
                return True
            if not chunk:
                return True
            held = self._transport.append_output(run_id, stream, offset, chunk)
            shipped.offsets[stream] = held
            if held == offset:  # it took none of it: try again at the next tick
                return False
