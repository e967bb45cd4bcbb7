"""Output files made ahead of time: each run's transcript and stderr files, without the wait.

Creating a file allocates an inode; on a busy ext4 that took 0.2 to 0.9 ms per file here
(bench/runner_overhead.py), while renaming one took 0.02 ms. So a background thread keeps
one empty pair of files ready in the runs folder (`.spare-PID-N.jsonl` / `.stderr`),
made while the previous command runs, and a run takes them by renaming them to its own
names. When no pair is ready (the first run, or two lanes at once) the run creates its
files itself, as it would without spares. Spares are removed when the runner stops; a
runner that died leaves one pair, removed by the next runner that starts in that folder.
"""

from __future__ import annotations

import glob
import os
import threading
from contextlib import suppress

from corral.foundation import filemodes
from corral.foundation.threads import ThreadService

_PREFIX = ".spare-"


class Spares(ThreadService):
    """One pair of empty files kept ready in `folder` by a background thread (started here)."""

    def __init__(self, folder: str) -> None:
        super().__init__("corral-spares")
        self._folder = folder
        self._lock = threading.Lock()
        self._ready: tuple[str, str] | None = None
        self._made = 0
        self._wanted = threading.Event()
        filemodes.make_dirs(folder)
        _remove_dead_runners_spares(folder)
        self._wanted.set()
        self.start()

    def take(self, transcript_path: str, stderr_path: str) -> bool:
        """Move the ready pair to these paths; False (nothing moved) if none is ready."""
        with self._lock:
            ready, self._ready = self._ready, None
        if ready is None:
            return False
        try:
            for spare, path in zip(ready, (transcript_path, stderr_path), strict=True):
                os.rename(spare, path)
        except OSError:  # the folder moved or went away: the run opens its own files
            return False
        return True

    def refill(self) -> None:
        """Make the next pair now (call it once the command runs: the work overlaps its run,
        not its start)."""
        self._wanted.set()

    def close(self) -> None:
        """Stop making spares and remove the one left."""
        self.stop()
        with self._lock:
            ready, self._ready = self._ready, None
        for path in ready or ():
            with suppress(OSError):
                os.remove(path)

    def _interrupt(self) -> None:
        self._wanted.set()

    def _run(self) -> None:
        while self._wanted.wait() and not self.stopping.is_set():
            self._wanted.clear()
            self._made += 1
            base = os.path.join(self._folder, f"{_PREFIX}{os.getpid()}-{self._made}")
            pair = (base + ".jsonl", base + ".stderr")
            try:
                for path in pair:
                    os.close(filemodes.open_file(path, os.O_WRONLY | os.O_TRUNC))
            except OSError:
                return  # the folder went away: runs create their own files from now on
            with self._lock:
                self._ready = pair


def _remove_dead_runners_spares(folder: str) -> None:
    """Remove spares whose runner (the PID in their name) no longer runs."""
    for path in glob.glob(os.path.join(folder, f"{_PREFIX}*")):
        pid = os.path.basename(path)[len(_PREFIX) :].split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            with suppress(OSError):
                os.remove(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
