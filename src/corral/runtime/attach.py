"""Attaching to a worker (`corral worker attach`): its runs' transcripts as they are
written, one run after another, until stopped or until the worker is gone.

    begin ─► the worker's oldest unfinished run, else the first run it opens from now on
      ─► step: the run's new bytes written out ─► once the run has finished and its bytes
               are all out: the next run the worker opened (runs in the order they were
               opened, by `seq`) ─► wait POLL_S ─► step ...
      ─► `stop()` (SIGINT, SIGTERM) or the worker offline or dead with no run left ─► end

A worker that runs several tasks at once has its runs shown one at a time: a run's
output comes whole, after the output of the run opened before it, so lines of two
tasks never interleave. Whether a run has finished is read before its bytes are copied,
so what it wrote before it finished is all shown.

The bytes come from an `Output`: the run's file under this store's runs folder (a local
store), or the server's copy through `GET /api/runs/{id}/output/transcript` (an HTTP
store), so attaching reads the same runs on every store.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from corral.foundation.clock import Clock
from corral.foundation.errors import NotFound
from corral.model.runs import Run
from corral.model.states import GONE
from corral.store import Store
from corral.store.location import is_inside, runs_dir, shipped_output

if TYPE_CHECKING:  # annotations only: the transport is imported by HTTP stores alone
    from corral.store.remote.transport import HttpTransport

POLL_S = 0.2  # how often new output, a run's end and the next run are looked for
CHUNK_BYTES = 64 * 1024
PAGE_RUNS = 50  # runs read at once while looking for the next one


class Output(Protocol):
    """Where a run's transcript is read from."""

    def read(self, run: Run, offset: int) -> bytes | None:
        """The transcript's bytes from `offset` on (a chunk, empty when there are none yet),
        or None when it has no transcript here (yet)."""
        ...


class LocalOutput:
    """A run's transcript in the runs folder of local store `db`: the server's copy of a
    remote runner's output if there is one, else the file its run names, if it lies in
    that folder (a row can name any file: only corral's own are read)."""

    def __init__(self, db: str) -> None:
        self._db = db

    def read(self, run: Run, offset: int) -> bytes | None:
        """See Output."""
        path = shipped_output(self._db, run.id, "transcript")
        if not os.path.exists(path):
            path = run.transcript_path or ""
            if not path or not is_inside(path, runs_dir(self._db)):
                return None
        try:
            with open(path, "rb") as handle:
                handle.seek(offset, os.SEEK_SET)
                return handle.read(CHUNK_BYTES)
        except (FileNotFoundError, IsADirectoryError):
            return None


class RemoteOutput:
    """A run's transcript as `corral serve` holds it (store/remote, server/run_output.py)."""

    def __init__(self, transport: HttpTransport) -> None:
        self._transport = transport

    def read(self, run: Run, offset: int) -> bytes | None:
        """See Output."""
        try:
            return self._transport.read_output(run.id, "transcript", offset)
        except NotFound:
            return None


class Attachment:
    """Writes the transcripts of worker `worker_id`'s runs to `write` as they grow, and a
    line about each run to `note` as it begins (and one if it left no transcript)."""

    def __init__(
        self,
        store: Store,
        worker_id: str,
        output: Output,
        *,
        write: Callable[[bytes], None],
        note: Callable[[str], None],
        clock: Clock,
    ) -> None:
        self._store, self._worker_id, self._output = store, worker_id, output
        self._write, self._note, self._clock = write, note, clock
        self._wake = threading.Event()
        self._stopping = False
        self._after_seq: int | None = None  # runs opened after this one are still to show
        self._run: Run | None = None  # the run being shown
        self._offset = 0
        self._shown_any = False

    def begin(self) -> None:
        """Where to start, read now in the caller's thread: the oldest run not finished,
        else the first run opened after the newest one there is."""
        unfinished = self._store.runs.unfinished_runs(self._worker_id)
        if unfinished:
            self._after_seq = unfinished[0].seq - 1
            return
        newest = self._store.runs.list_runs(worker_id=self._worker_id, limit=1)
        self._after_seq = newest[0].seq if newest else 0

    def stop(self) -> None:
        """End `run` soon (safe from a signal handler or another thread)."""
        self._stopping = True
        self._wake.set()

    def run(self) -> None:
        """Show runs until `stop()`, or until the worker is gone and its last run shown."""
        if self._after_seq is None:
            self.begin()
        while not self._stopping and not self.step():
            self._clock.wait(self._wake, POLL_S)

    def step(self) -> bool:
        """One look: the shown run's new bytes, or the next run's start; True once the
        worker is gone (offline or dead) and no run of it is left to show."""
        if self._run is None:
            gone = self._store.workers.get_worker(self._worker_id).status in GONE
            self._run = self._next_run()  # after the status: a gone worker opens no run
            if self._run is None:
                return gone
            self._offset, self._shown_any = 0, False
            self._note(f"run {self._run.id} of task {self._run.task_id}")
        run = self._run
        finished = self._store.runs.get_run(run.id).finished  # before the copy: see above
        self._copy(run)
        if finished:
            if not self._shown_any:
                self._note(f"run {run.id} left no transcript here")
            self._after_seq, self._run = run.seq, None
        return False

    def _copy(self, run: Run) -> None:
        while chunk := self._output.read(run, self._offset):
            self._write(chunk)
            self._offset += len(chunk)
            self._shown_any = True

    def _next_run(self) -> Run | None:
        """The first run the worker opened after `_after_seq`, if any."""
        after = self._after_seq or 0
        found, before = None, None
        while True:
            page = self._store.runs.list_runs(
                worker_id=self._worker_id, limit=PAGE_RUNS, before_seq=before
            )
            newer = [r for r in page if r.seq > after]  # newest first
            if newer:
                found = newer[-1]
            if len(newer) < PAGE_RUNS:
                return found
            before = page[-1].seq
