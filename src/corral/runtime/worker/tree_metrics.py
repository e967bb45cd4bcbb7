"""What the running tasks cost: CPU % and resident memory of each task's whole process
tree (the agent and every descendant it started), for the heartbeat to carry.

The runner's own figures say little: an agent CLI and the tools it spawns do the work.
A sample reads every process below each running command: on Linux through /proc (the
children lists proctree.py walks, and one read of /proc/PID/stat per process), elsewhere,
or with `CORRAL_PORTABLE=1`, through psutil. CPU % is the CPU time the trees spent
between two samples over the wall time between them (100 = one core busy), counting the
children a tree's processes have reaped (their cutime/cstime) so short-lived tools are
not missed; a process seen for the first time counts all its CPU time, as it started
since the sample before. RSS is summed over the processes, so pages they share are
counted once per process: an upper bound, as `ps` would add it up.
"""

from __future__ import annotations

import os
from contextlib import suppress
from dataclasses import dataclass

import psutil

from corral.foundation.clock import Clock
from corral.runtime.worker import proctree

_TICK_S = 1.0 / os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 0.01
_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


@dataclass(frozen=True, slots=True)
class Usage:
    """One process's cumulative CPU seconds (its reaped children's too) and its RSS."""

    cpu_s: float
    rss_bytes: int


@dataclass(frozen=True, slots=True, kw_only=True)
class TreeFigures:
    """The running trees' CPU % since the sample before, and their resident memory."""

    cpu_percent: float
    rss_bytes: int
    processes: int


class TreeSampler:
    """Samples the process trees of the running commands; keeps what the last sample saw."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._last_at = clock.monotonic()
        self._last: dict[int, float] = {}

    def sample(self, roots: list[int]) -> TreeFigures | None:
        """The figures of the trees under `roots` (None when there are none)."""
        now = self._clock.monotonic()
        seen = read_trees(roots)
        spent_s = sum(max(0.0, u.cpu_s - self._last.get(pid, 0.0)) for pid, u in seen.items())
        elapsed_s = now - self._last_at
        self._last_at, self._last = now, {pid: u.cpu_s for pid, u in seen.items()}
        if not seen:
            return None
        return TreeFigures(
            cpu_percent=round(100.0 * spent_s / elapsed_s, 1) if elapsed_s > 0 else 0.0,
            rss_bytes=sum(u.rss_bytes for u in seen.values()),
            processes=len(seen),
        )


def read_trees(roots: list[int]) -> dict[int, Usage]:
    """The usage of every live process in the trees under `roots`, by pid."""
    if proctree.available():
        pids = [p for root in roots for p in (root, *proctree.tree(root))]
        return {pid: u for pid in pids if (u := _proc_usage(pid)) is not None}
    return _portable_usage(roots)


def _proc_usage(pid: int) -> Usage | None:
    """From /proc/PID/stat: utime, stime, cutime, cstime (ticks) and rss (pages)."""
    try:
        fields = proctree.read_file(f"/proc/{pid}/stat").rsplit(b")", 1)[1].split()
    except (OSError, IndexError):  # gone meanwhile
        return None
    ticks = sum(int(f) for f in fields[11:15])
    return Usage(cpu_s=ticks * _TICK_S, rss_bytes=int(fields[21]) * _PAGE_BYTES)


def _portable_usage(roots: list[int]) -> dict[int, Usage]:
    """The same through psutil (macOS, or CORRAL_PORTABLE=1)."""
    found: dict[int, Usage] = {}
    for root in roots:
        with suppress(psutil.Error):
            top = psutil.Process(root)
            for proc in (top, *top.children(recursive=True)):
                with suppress(psutil.Error), proc.oneshot():
                    t = proc.cpu_times()
                    cpu_s = t.user + t.system + t.children_user + t.children_system
                    found[proc.pid] = Usage(cpu_s=cpu_s, rss_bytes=proc.memory_info().rss)
    return found
