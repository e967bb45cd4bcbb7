"""Worker temporary directories: `tmp/NAME.PID` beside the store, one per runner process.

A command worker's tasks get it as `TMPDIR` (and `CORRAL_WORKER_TMP`), so what agents
leave in temp files is theirs alone and goes with the worker: the runner removes it when
it stops, and `corral reconcile` removes those whose process is gone (a worker killed with
SIGKILL cleans nothing up). The pid in the name is what makes the second possible.
"""

from __future__ import annotations

import os
import shutil

from corral.foundation import filemodes
from corral.store.location import path_component, runs_dir


def tmp_root(db: str) -> str:
    """`tmp/` beside the store's `runs/`."""
    return os.path.join(os.path.dirname(runs_dir(db)), "tmp")


def make_tmp(db: str, name: str) -> str:
    """A fresh temporary directory for this process's worker `name`."""
    path = os.path.join(tmp_root(db), f"{path_component('name', name)}.{os.getpid()}")
    filemodes.make_dirs(path)
    return path


def remove_tmp(path: str) -> None:
    """Remove a worker's temporary directory and everything in it."""
    shutil.rmtree(path, ignore_errors=True)


def prune_tmp(db: str) -> list[str]:
    """Remove the temporary directories of worker processes that are gone; their paths."""
    root = tmp_root(db)
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return []
    removed = []
    for entry in names:
        pid = entry.rpartition(".")[2]
        path = os.path.join(root, entry)
        # Only folders: a symbolic link or a file there is not a runner's, and is left alone.
        if pid.isascii() and pid.isdigit() and not _running(int(pid)) and _is_folder(path):
            remove_tmp(path)
            if not os.path.lexists(path):  # counted only once it is gone
                removed.append(path)
    return removed


def _is_folder(path: str) -> bool:
    return os.path.isdir(path) and not os.path.islink(path)


def _running(pid: int) -> bool:
    """Whether process `pid` exists (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # OverflowError: past any pid
        return False
    except PermissionError:
        return True  # it exists, under another user
    return True
