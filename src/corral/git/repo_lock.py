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
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

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
    through the thread lock rather than deadlock on two flocks of their own."""
    path = os.path.join(common_dir, name)
    with _REGISTRY_LOCK:
        lock = _LOCKS.get(path)
        if lock is None:
            lock = _LOCKS[path] = RepoLock(path)
        return lock
