"""Linux's fast paths for running and watching processes, and what stands in for them
elsewhere, behind one seam.

    pidfd_open(pid)     a pidfd (Linux 5.3+): waits that wake when a process exits and
                        signals that can never reach a reused pid; None elsewhere, and
                        callers poll (psutil, checking the process's start time)
    fd_listing()        /proc/self/fd, which lets posix_spawn close inherited descriptors
                        (runtime/worker/spawn.py); None elsewhere, and Popen starts commands
    subreaper()         whether the runner may become a child subreaper and walk
                        /proc/PID/task/TID/children (runtime/worker/proctree.py); else the
                        executor scans every process for a run's mark
    started_at_s(pid)   a process's start time from /proc/PID/stat, as psutil computes it,
                        without importing psutil (a fifth of `worker register`'s
                        imports); None elsewhere, and callers ask psutil
                        (corral.foundation.processes)

macOS takes every fallback (kqueue could wait on a process there, but a poll is what is
tested). `CORRAL_PORTABLE=1` in a process's environment turns every fast path off, so the
test suite runs the fallbacks on Linux (tests/runtime/test_portable.py). Windows is out
of scope: corral's process model (sessions, process groups, signals) is POSIX's.
"""

from __future__ import annotations

import os

PORTABLE_ENV = "CORRAL_PORTABLE"
FD_LISTING = "/proc/self/fd"
PROC = "/proc"
START_FIELD = 19  # starttime (field 22 of /proc/PID/stat) among the fields after `(comm)`


def portable() -> bool:
    """Whether the fallbacks are forced (`CORRAL_PORTABLE=1`)."""
    return os.environ.get(PORTABLE_ENV) == "1"


def pidfd_open(pid: int) -> int | None:
    """A pidfd for `pid`, or None where there are none. ProcessLookupError if it is gone."""
    if portable() or not hasattr(os, "pidfd_open"):
        return None
    try:
        return os.pidfd_open(pid)
    except ProcessLookupError:
        raise
    except OSError:  # ENOSYS: a kernel before 5.3
        return None


def fd_listing() -> str | None:
    """The folder that lists this process's open descriptors, if there is one."""
    return None if portable() or not os.path.isdir(FD_LISTING) else FD_LISTING


def subreaper_allowed() -> bool:
    """Whether the subreaper walk may be tried at all (it needs Linux's prctl and /proc)."""
    return not portable() and os.path.isdir(f"/proc/{os.getpid()}/task")


def started_at_s(pid: int) -> float | None:
    """When `pid` started, in seconds since the epoch, None where there is no /proc.
    ProcessLookupError if it is gone.

    The figure is psutil's own on Linux, by the same arithmetic: the start in clock ticks
    after boot, divided by the ticks per second, plus the boot time (`btime`)."""
    if portable() or not os.path.isdir(f"{PROC}/self"):
        return None
    try:
        with open(f"{PROC}/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        raise ProcessLookupError(pid) from None
    ticks = int(stat.rsplit(b")", 1)[1].split()[START_FIELD])
    return ticks / os.sysconf("SC_CLK_TCK") + _boot_time_s()


def _boot_time_s() -> float:
    with open(f"{PROC}/stat", "rb") as handle:
        for line in handle:
            if line.startswith(b"btime"):
                return float(line.split()[1])
    raise ProcessLookupError("no btime in /proc/stat")
