"""Finding every process of a run, cheaply: the runner as a child subreaper.

With `PR_SET_CHILD_SUBREAPER` (Linux 3.4+) on the runner, a process whose parent dies
is handed to the runner instead of to init, whether or not it called `setsid`. So every
process a command started is either still below the command (its descendants) or one of
the runner's own children. The run's processes are then found by walking
`/proc/PID/task/TID/children` from those two roots and checking the `CORRAL_RUN_ID` mark
of the runner's adopted children only: a handful of reads, however many processes the
machine runs. Without subreaper support (or without that /proc file), `available()` is
False and the executor scans every process's environment instead.

The runner must then reap what it adopts. It does so by pid, for its own children that
are not the command of a running task (`spawning()` registers those under a lock, so a
command that exits at once is never taken for an orphan) and that are in another session
than the runner's; never by `waitpid(-1)`. Both would steal an exit status that
`subprocess` waits for: the runner's own git, setup and land commands are its children
too, in its session (a task's command starts a session of its own, and what its tree
leaves behind can never join the runner's), and `subprocess` reads a child reaped by
someone else as exit status 0 (a failed `git rev-parse --verify MERGE_HEAD` once read as
a merge in progress, and the run failed).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from corral.foundation import fastpaths
from corral.foundation.clock import Clock

_PR_SET_CHILD_SUBREAPER = 36
REAP_POLL_S = 0.001
EXEC_WAIT_S = 0.1
_LOCK = threading.Lock()
_OWNED: set[int] = set()  # pids of the commands of running tasks: never reaped here
_state: dict[str, bool] = {}


def available() -> bool:
    """Make this process a child subreaper (once); whether that and /proc children work."""
    if "on" not in _state:
        _state["on"] = (
            fastpaths.subreaper_allowed()
            and _become_subreaper()
            and os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
        )
    return _state["on"]


def _become_subreaper() -> bool:
    try:
        import ctypes  # noqa: PLC0415 - runners only; `corral status` loads this (1.7 ms)

        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):  # not Linux, or no prctl
        return False


@contextmanager
def spawning() -> Iterator[set[int]]:
    """Hold the lock while a command starts; add its pid to the yielded set."""
    with _LOCK:
        yield _OWNED


def commands() -> list[int]:
    """The pids of the commands of the running tasks (what the heartbeat measures)."""
    with _LOCK:
        return sorted(_OWNED)


def release(pid: int) -> None:
    """The command `pid` has been reaped by its owner: it is no longer a running task's."""
    with _LOCK:
        _OWNED.discard(pid)


def children(pid: int) -> list[int]:
    """The pids of `pid`'s children (every thread's), [] if it is gone."""
    found: list[int] = []
    with suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with suppress(OSError):
                found.extend(int(p) for p in read_file(f"/proc/{pid}/task/{tid}/children").split())
    return found


def read_file(path: str) -> bytes:
    """The whole of a small /proc file: three system calls, where `open()` makes seven."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = [os.read(fd, 65536)]
        while chunks[-1]:
            chunks.append(os.read(fd, 65536))
    finally:
        os.close(fd)
    return b"".join(chunks)


def tree(pid: int) -> list[int]:
    """The pids of `pid`'s descendants, as far as they still link to it."""
    found, todo = [], children(pid)
    while todo:
        found.append(child := todo.pop())
        todo.extend(children(child))
    return found


def marked(pid: int, mark: bytes, *, exec_wait_s: float = 0.0) -> bool:
    """Whether the process's environment holds `mark` (`CORRAL_RUN_ID=...`).

    A process in the middle of `execve` reads as an empty environment (the new image's
    is not set up yet): a `setsid sleep` orphaned as its shell exits can be caught there.
    An empty read is asked again for up to `exec_wait_s` before it counts as unmarked
    (not by default: kernel threads read empty too, and a scan of every process meets
    them all).
    """
    deadline = time.monotonic() + exec_wait_s
    try:
        while not (environ := read_file(f"/proc/{pid}/environ")) and time.monotonic() < deadline:
            time.sleep(REAP_POLL_S)
    except OSError:  # gone, or not ours to read
        return False
    return mark in environ.split(b"\0")


def adopted(mark: bytes) -> list[int]:
    """The runner's adopted children marked with `mark`, with their descendants; adopted
    children that have exited are reaped on the way."""
    found = []
    with _LOCK:
        for child in _orphans():
            if not _reaped(child) and marked(child, mark, exec_wait_s=EXEC_WAIT_S):
                found += [child, *tree(child)]
    return found


def reap_adopted() -> None:
    """Reap the runner's adopted children that have exited."""
    with _LOCK:
        for child in _orphans():
            _reaped(child)


def _orphans() -> list[int]:
    """The runner's children that it adopted: neither a running task's command nor one of
    its own commands (in its own session, waited for by whoever started it). Called
    under _LOCK."""
    session = os.getsid(0)
    return [
        child
        for child in children(os.getpid())
        if child not in _OWNED and _session_of(child) not in (session, None)
    ]


def _session_of(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except ProcessLookupError:
        return None


def reap_group(pgid: int, *, clock: Clock, within_s: float) -> None:
    """Reap the adopted children of process group `pgid`, waiting up to `within_s` for
    them to die: a process the run's tree forked while it was being ended is killed with
    the group, but may finish dying (and be handed to the runner) only after the last
    reap; left alone it would stay a zombie of the runner."""
    deadline = clock.monotonic() + within_s
    while True:
        with _LOCK:
            left = [
                child
                for child in children(os.getpid())
                if child not in _OWNED and _group_of(child) == pgid and not _reaped(child)
            ]
        if not left or clock.monotonic() >= deadline:
            return
        clock.sleep(REAP_POLL_S)


def _group_of(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def _reaped(pid: int) -> bool:
    """Reap child `pid` if it has exited; whether it had."""
    try:
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        return True
