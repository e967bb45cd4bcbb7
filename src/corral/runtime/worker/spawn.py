"""Starting a task's command: a new session, its output straight to the run's files.

Two ways to the same child, chosen per command:
- `os.posix_spawnp` where the command runs in the runner's own working directory (every
  command task that has no `workdir` and no worktree). The child starts in a session of
  its own (`setsid`), with stdin, stdout and stderr set by the spawn's file actions and
  SIGPIPE and SIGXFSZ back to their defaults, as `subprocess` would leave them. It costs
  a third less than `subprocess.Popen` (bench/runner_overhead.py): no error pipe and no
  Python-level set-up. Nothing else is inherited: what Python, SQLite and this package
  open is close-on-exec, and the descriptors that are not (the runner inherited them)
  are closed by the spawn's file actions, as Popen's `close_fds` would.
- `subprocess.Popen` elsewhere, and where /proc/self/fd cannot list the descriptors:
  `posix_spawn` cannot change the child's directory in this Python, and changing the
  runner's own would race its other threads.

Either way the caller gets a `Child`: its pid, which is also its process group's id,
and `reap()`, which waits for it and gives its exit code (negative: the signal that
ended it).
"""

from __future__ import annotations

import os
import signal
import subprocess
from contextlib import suppress
from dataclasses import dataclass

from corral.foundation import fastpaths
from corral.foundation.errors import CorralError, InvalidInput

# Dispositions `subprocess` restores for a child (restore_signals); Python ignores both.
_DEFAULT_SIGNALS = (signal.SIGPIPE, signal.SIGXFSZ)
# posix_spawn where the open descriptors can be listed (Linux): see _inheritable.
_FDS = fastpaths.fd_listing()


class CommandNotFound(CorralError):
    """The command's executable was not found."""

    exit_code = 3


@dataclass(frozen=True, slots=True)
class Child:
    """A started command: its pid (and process group id) and, if Popen started it, that."""

    pid: int
    popen: subprocess.Popen[bytes] | None = None

    def reap(self) -> int:
        """Wait for the child and reap it; its exit code, -N if signal N ended it."""
        if self.popen is not None:
            return self.popen.wait()
        try:
            return os.waitstatus_to_exitcode(os.waitpid(self.pid, 0)[1])
        except ChildProcessError:  # reaped by someone else (SIGCHLD ignored), as Popen says
            return 0


def start(
    argv: tuple[str, ...], *, env: dict[str, str], cwd: str, stdio: tuple[int, int, int]
) -> Child:
    """Start `argv` in a new session with `stdio` as its stdin, stdout and stderr."""
    if not argv:
        raise InvalidInput("argv", "a command to run", list(argv))
    if not os.path.isdir(cwd):
        raise InvalidInput("cwd", "an existing directory", cwd)
    try:
        if _FDS is not None and cwd == os.getcwd():
            return _posix_spawn(argv, env, stdio, _FDS)
        return _popen(argv, env, cwd, stdio)
    except OSError as exc:
        raise _spawn_error(argv, cwd, exc) from exc


def _posix_spawn(
    argv: tuple[str, ...], env: dict[str, str], stdio: tuple[int, int, int], listing: str
) -> Child:
    actions: list[tuple[int, ...]] = [
        (os.POSIX_SPAWN_DUP2, fd, target) for target, fd in enumerate(stdio)
    ]
    actions += [(os.POSIX_SPAWN_CLOSE, fd) for fd in _inheritable(listing)]
    pid = os.posix_spawnp(
        argv[0], argv, env, file_actions=actions, setsid=True, setsigdef=_DEFAULT_SIGNALS
    )
    return Child(pid)


def _inheritable(listing: str) -> list[int]:
    """Descriptors above stderr that a child would inherit (not close-on-exec): those the
    runner itself inherited from whatever started it, as a rule. Popen closes every
    descriptor in the child; posix_spawn closes these."""
    found = []
    for name in os.listdir(listing):
        with suppress(OSError):  # the listing's own descriptor, closed by now
            if int(name) > 2 and os.get_inheritable(int(name)):
                found.append(int(name))
    return found


def _popen(
    argv: tuple[str, ...], env: dict[str, str], cwd: str, stdio: tuple[int, int, int]
) -> Child:
    stdin, stdout, stderr = stdio
    # S603: argv is passed as a list, never to a shell.
    proc = subprocess.Popen(  # noqa: S603
        argv, stdin=stdin, stdout=stdout, stderr=stderr, env=env, cwd=cwd, start_new_session=True
    )
    return Child(proc.pid, proc)


def _spawn_error(argv: tuple[str, ...], cwd: str, exc: OSError) -> CorralError:
    """The one-line error for a command that could not be started."""
    if exc.filename == cwd:  # the directory went away after the check above
        return InvalidInput("cwd", "an existing directory", cwd)
    if isinstance(exc, FileNotFoundError):
        return CommandNotFound(f"command not found: {argv[0]}")
    return CommandNotFound(f"cannot run {argv[0]}: {exc.strerror}")
