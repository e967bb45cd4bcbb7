"""A lock file in a repository's git directory, held across processes and threads.

Git does not make its worktree bookkeeping safe against itself: `git worktree add` writes
`.git/worktrees/NAME/` file by file, and a `git branch -D` or `git worktree list` run by
another process in that moment reads a half-made entry and fails ("failed to read
.git/worktrees/NAME/commondir"). Runners, the reconciler's prune and the review flow of
one host all change the same repository, so corral serializes its own changes with
`flock` on a file in the common git directory (the kernel drops the lock with the
process, so a killed holder never leaves it held). Within a process a re-entrant thread
lock comes first: one holder at a time, and a holder may take it again (the prune pass
holds it around the removals it makes).

Every lock file corral takes is named here: a sandboxed agent sees the git directory, and
`flock` needs no write permission, so the sandbox covers each of these files with
/dev/null (runtime/worker/sandbox.py); an agent holding one would stall every corral
process of the repository.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

WORKTREE_LOCK = "corral-worktrees.lock"  # worktrees added, removed, listed; branches deleted
MERGE_LOCK = "corral-merge.lock"  # a branch landing on its base (git/merging.py)
REMOTE_REFS_LOCK = "corral-remote-refs.lock"  # git/remote_base.py says why
OBJECTS_LOCK = "corral-objects.lock"  # run object folders lent and settled (run_objects.py)
NAMES = (WORKTREE_LOCK, MERGE_LOCK, REMOTE_REFS_LOCK, OBJECTS_LOCK)

_REGISTRY_LOCK = threading.Lock()
_LOCKS: dict[str, RepoLock] = {}


class RepoLock:
    """The exclusive lock on one file: `with lock.held(): ...`."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._thread = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the block (again, if this thread holds it already)."""
        with self._thread:
            if self._depth == 0:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX)
                except BaseException:
                    os.close(fd)
                    raise
                self._fd = fd
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0 and self._fd is not None:
                    os.close(self._fd)  # closing releases the flock
                    self._fd = None


def repo_lock(common_dir: str, name: str) -> RepoLock:
    """The process's one lock on `name` in the git directory `common_dir`: every object of
    a process that changes the repository shares it, so its threads exclude each other
    through the thread lock rather than deadlock on two flocks of their own. `name` is
    one of NAMES, so that the sandbox knows every lock file there is."""
    if name not in NAMES:
        raise ValueError(f"{name}: not a lock of corral's (git/repo_lock.py NAMES)")
    path = os.path.join(common_dir, name)
    with _REGISTRY_LOCK:
        lock = _LOCKS.get(path)
        if lock is None:
            lock = _LOCKS[path] = RepoLock(path)
        return lock


def lock_files(common_dir: str) -> tuple[str, ...]:
    """The paths of corral's lock files in the git directory `common_dir`, each made if
    missing (empty, as a lock takes it), so that a sandbox can cover every one; one that
    cannot be made (a read-only repository) is left out: corral cannot lock it either."""
    paths = []
    for name in NAMES:
        path = os.path.join(common_dir, name)
        with suppress(OSError):
            os.close(os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644))
        if os.path.isfile(path):
            paths.append(path)
    return tuple(paths)
