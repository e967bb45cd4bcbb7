"""The modes of the folders and files corral makes: private unless the store is shared.

Transcripts hold agent output, and agent output can hold secrets; logs name tasks and
errors; the database holds everything. So what corral makes beside its store (the store's
folder when corral makes it, the database and so its WAL and SHM files, which SQLite
creates with the database's mode, the lock and pid files, logs, `runs/`, `tmp/`, the
worktrees folder) is made

    private (the default):  folders 0700, files 0600
    group:                  folders 0770, files 0660, for a team that shares a store
                            through a Unix group (`[store] mode = "group"`)

whatever the umask. The mode is the process's, set once from the settings (`use`) before
anything is made; files and folders that exist already are left as they are, except
corral's own files, which are set when opened for writing. What task commands create
follows their own umask: corral does not change it.
"""

from __future__ import annotations

import os
from contextlib import suppress

_MODES = {"private": (0o700, 0o600), "group": (0o770, 0o660)}
_current = {"mode": "private"}


def use(mode: str) -> None:
    """Make folders and files with `mode` (private or group) from now on."""
    _current["mode"] = mode


def dir_mode() -> int:
    """The mode of a folder corral makes."""
    return _MODES[_current["mode"]][0]


def file_mode() -> int:
    """The mode of a file corral makes."""
    return _MODES[_current["mode"]][1]


def make_dirs(path: str) -> None:
    """`os.makedirs(path, exist_ok=True)`, each folder it makes given `dir_mode()`."""
    missing = []
    here = os.path.abspath(path)
    while not os.path.isdir(here):
        missing.append(here)
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, dir_mode())
        except FileExistsError:  # made meanwhile by another process: theirs to set
            continue
        os.chmod(folder, dir_mode())  # the umask may have taken bits away


def open_file(path: str, flags: int) -> int:
    """`os.open(path, flags | O_CREAT)`, the file set to `file_mode()`."""
    fd = os.open(path, flags | os.O_CREAT | os.O_CLOEXEC, file_mode())
    with suppress(OSError):  # not ours to change (a shared file of another user): as it is
        os.fchmod(fd, file_mode())
    return fd


def append(path: str) -> int:
    """A descriptor that appends to `path` (a log), made if it is not there."""
    return open_file(path, os.O_WRONLY | os.O_APPEND)
