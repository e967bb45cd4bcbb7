"""The status file (`[status] file`): seed 001's `worker-heartbeats.json`, for tools that
read files rather than ask a store.

    {"workers": {"slot-1": {"slot": "slot-1", "status": "idle", "task": null, ...}}}

Each slot's entry is the one `GET /api/heartbeats` answers (board/model/heartbeats.py), read
from the store every `[status] interval`: a slot that starts or ends a task shows it
within an interval, and `lastUpdate` moves with its heartbeats, which is how the seed's
readers tell a live slot from a crashed one. The file is rewritten only when its content
changed, and always whole and atomically (seed 004): a temporary file beside it, written,
flushed to disk, renamed over it, and its folder synced, so a reader at any moment parses
either the old file or the new one, never a part. An outage of the store leaves the file
as it was (its `lastUpdate`s age, as the seed's watchdog expects of a silent fleet).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile

from corral.board.usecases.heartbeats import slots
from corral.foundation import filemodes
from corral.foundation.errors import CorralError
from corral.foundation.logs import event
from corral.foundation.threads import ThreadService
from corral.store import Store


class StatusFile(ThreadService):
    """A daemon thread keeping `path` up to date from now on (started here)."""

    def __init__(self, store: Store, path: str, *, interval_s: float, log: logging.Logger) -> None:
        super().__init__("corral-status-file")
        self._store, self._path, self._interval_s, self._log = store, path, interval_s, log
        self._written: bytes | None = None
        self._failing = False
        self.start()

    def _run(self) -> None:
        while not self.stopping.is_set():
            self.refresh()
            self.stopping.wait(self._interval_s)
        self.refresh()  # the pool's last state: its slots offline

    def refresh(self) -> None:
        """Rewrite the file if the slots changed; a failure is logged once, not raised."""
        try:
            content = json.dumps({"workers": slots(self._store)}, indent=2).encode() + b"\n"
            if content != self._written:
                write_atomically(self._path, content)
                self._written = content
        except (CorralError, OSError) as exc:
            if not self._failing:
                reason = exc.message if isinstance(exc, CorralError) else str(exc)
                event(self._log, "status_file.failed", logging.WARNING, error=reason)
            self._failing = True
        else:
            self._failing = False


def write_atomically(path: str, content: bytes) -> None:
    """Replace `path` with `content` so that a reader sees the old file or the new one."""
    folder = os.path.dirname(os.path.abspath(path))
    filemodes.make_dirs(folder)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".status-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, filemodes.file_mode())
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    directory = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(directory)  # the rename itself survives a crash
    finally:
        os.close(directory)
