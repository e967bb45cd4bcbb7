"""Whether a process recorded in the store still runs, and whether it is the one that
registered: the one place corral asks the OS about a recorded pid.

A pid alone proves nothing: the kernel reuses pids, so a recorded pid is alive only while
a process with that pid runs *and* started no later than the moment it was recorded (a
second of slack for the clocks' resolution). A zombie has exited, whatever its pid says.
Workers, orchestrators and cleanups all ask here before they act on a pid.

Before a signal, more is needed (`is_corral_process`), because the store's rows can be
written by anyone who can write the store (on a shared PostgreSQL server, any of its
users): a row naming the pid of an unrelated process must not make corral signal it. So
a process is signalled only if, at that moment,
- its start time is the one recorded when it registered (`started_at`; when none was
  recorded, it started no later than the registration), and
- it carries corral's mark, which no row can give it: its command line is corral's own
  (`corral ... worker start` / `orchestrator start`, with the same `--name` if one was
  given), or its environment, as it started, holds `CORRAL_WORKER_NAME` set to the
  worker's name (how a bash loop registered with `corral worker register` opts in).
The signal goes through a pidfd opened before the checks, so a pid reused between the
check and the signal cannot receive it (without pidfds, corral.fastpaths: through psutil,
which checks the start time again just before it signals).
"""

from __future__ import annotations

import itertools
import os
import signal
from contextlib import suppress

import psutil

from corral import fastpaths

#: The environment variable that marks a process as the worker of that name.
WORKER_MARK_ENV = "CORRAL_WORKER_NAME"
START_SLACK_S = 0.05  # create times are computed from clock ticks: equal to about 10 ms


def process_alive(pid: int | None, registered_at_s: float) -> bool:
    """True if `pid` runs and was started before it was recorded (not a reused pid).

    None (no pid was recorded, as for a remote worker) counts as alive: nothing here can
    tell, so the decision is left to heartbeats.
    """
    if pid is None:
        return True
    try:
        process = psutil.Process(pid)
        return bool(
            process.create_time() <= registered_at_s + 1.0
            and process.status() != psutil.STATUS_ZOMBIE  # exited, not yet reaped
        )
    except psutil.Error:
        return False


def started_at(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), None if it does not run here."""
    try:
        created: float = psutil.Process(pid).create_time()
    except psutil.Error:
        return None
    return created


def is_corral_process(
    pid: int, *, role: str, name: str | None, started_s: float | None, registered_at_s: float
) -> bool:
    """Whether `pid` is corral's `role` process (`worker` or `orchestrator`) named `name`,
    started at `started_s` (or, when that is unknown, by `registered_at_s`)."""
    try:
        process = psutil.Process(pid)
        created = process.create_time()
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        if started_s is not None and abs(created - started_s) > START_SLACK_S:
            return False
        if started_s is None and created > registered_at_s + 1.0:
            return False
        if _runs_corral(process.cmdline(), role, name):
            return True
        return role == "worker" and name is not None and _marked(process, name)
    except psutil.Error:  # gone, or not ours to read: not provably ours either
        return False


def _runs_corral(argv: list[str], role: str, name: str | None) -> bool:
    """Whether `argv` is `corral ... ROLE start ...` (any --name in it being `name`)."""
    if not any(os.path.basename(arg) == "corral" or arg == "corral.cli.main" for arg in argv):
        return False
    pairs = list(itertools.pairwise(argv))
    if (role, "start") not in pairs:
        return False
    given = [b for a, b in pairs if a == "--name"]
    given += [arg.removeprefix("--name=") for arg in argv if arg.startswith("--name=")]
    return name is None or not given or given == [name]


def _marked(process: psutil.Process, name: str) -> bool:
    environ: dict[str, str] = process.environ()
    return environ.get(WORKER_MARK_ENV) == name


def signal_if_corral(
    pid: int,
    sig: signal.Signals,
    *,
    role: str,
    name: str | None,
    started_s: float | None,
    registered_at_s: float,
) -> bool:
    """Send `sig` to `pid` if it is provably corral's process (`is_corral_process`); False
    if it is not (or has gone), and then nothing was sent."""
    try:
        fd = fastpaths.pidfd_open(pid)
        # Without pidfds, psutil's handle checks the start time before it signals.
        handle = psutil.Process(pid) if fd is None else None
    except (OSError, psutil.NoSuchProcess):  # gone
        return False
    try:
        proven = is_corral_process(
            pid, role=role, name=name, started_s=started_s, registered_at_s=registered_at_s
        )
        if proven and fd is not None:
            signal.pidfd_send_signal(fd, sig)
        elif proven and handle is not None:
            handle.send_signal(sig)
        return proven
    except (ProcessLookupError, psutil.NoSuchProcess):
        return False
    finally:
        if fd is not None:
            with suppress(OSError):
                os.close(fd)
