"""Whether a process recorded in the store still runs, and whether it is corral's own to
signal: the one place corral asks the OS about a recorded pid.

A pid alone proves nothing: the kernel reuses pids, so a recorded pid is alive only while
a process with that pid runs *and* started no later than the moment it was recorded (a
second of slack for the clocks' resolution). A zombie has exited, whatever its pid says.
Workers, orchestrators and cleanups all ask here before they act on a pid.

Before a signal, more is needed, because the store's rows can be written by anyone who can
write the store (a worker token over HTTP, any user of a shared PostgreSQL server), and
such a writer can name any pid, copy its start time from /proc, and start a process whose
command line or environment imitates corral's. Neither a command line nor an environment
variable is proof, so corral signals only
- a process it started and still holds: the pool's supervisor signals its own workers
  through the Popen/pidfd it keeps (runtime/pool/worker_process.py), a runner its task's
  tree (runtime/worker/executor.py), never through a row; or
- a process someone else started (`worker stop` or `orchestrator stop` from another CLI
  process, an orchestrator adopting the workers of one that died, the leftovers of a
  finished run) only if
  * it runs as the user corral runs as (real and effective uid), always: another user's
    process is never signalled, whatever it carries (corral run as root included);
  * it started at the moment recorded (`started_at`; none recorded: no later than the
    registration), so a reused pid is spared; and
  * its environment, as it started, holds a key whose SHA-256 the store recorded
    (`key_hash`): a random key corral generated when it started the process
    (CORRAL_WORKER_KEY for a worker's runner, CORRAL_ORCHESTRATOR_KEY for an
    orchestrator; CORRAL_RUN_KEY, one per runner, for every process of its runs:
    corral.foundation.process_keys). The store keeps the hash, never the key; a store writer cannot
    read another user's /proc/PID/environ, and a decoy corral never started has no key
    whose hash any row holds, so copying a row's hash into a forged row proves nothing.
    The key is per worker rather than per run so that a run costs no write beyond its
    own; a run's processes get the runs key, never a runner's or an orchestrator's own
    (the executor and the pool strip them: process_keys.OWN_KEYS), so a task cannot pass
    for its runner, nor a worker for its orchestrator. The hash lives on the row that
    names the pid, so whoever reads the row to signal holds the other half of the proof,
    from any shell of the host, with no file of its own to keep.

Why not a pidfd or a start time alone (what the issue first asked): a start time is public
in /proc/PID/stat, so a forged row can carry it; a pidfd is proof only for the process
that opened it at spawn, which `worker stop` from another process is not. The signal
itself goes through a pidfd opened before the checks, so a pid reused between the check
and the signal cannot receive it (without pidfds, through psutil, which checks the start
time again just before it signals).
"""

from __future__ import annotations

import hmac
import os
import signal
import time
from collections.abc import Callable
from contextlib import suppress

import psutil

from corral.foundation import fastpaths
from corral.foundation.process_keys import WORKER_KEY_ENV, key_digest

START_SLACK_S = 0.05  # create times are computed from clock ticks: equal to about 10 ms
# How long an environment that reads empty is read again (a process in `execve`).
EXEC_WAIT_S, EXEC_POLL_S = 0.1, 0.001


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


# -- proof -----------------------------------------------------------------------------


def is_mine(process: psutil.Process) -> bool:
    """Whether `process` runs as the user corral runs as (real and effective uid)."""
    uids = process.uids()
    return bool(uids.real == uids.effective == os.geteuid())


def holds_key(process: psutil.Process, env_name: str, recorded_hash: str | None) -> bool:
    """Whether `process` is corral's user's and its environment, as it started, holds in
    `env_name` the key whose hash is `recorded_hash` (None: nothing can be proved)."""
    if recorded_hash is None or not is_mine(process):
        return False
    key = _environ(process).get(env_name)
    return key is not None and hmac.compare_digest(key_digest(key), recorded_hash)


def _environ(process: psutil.Process) -> dict[str, str]:
    """The process's environment as it started. One that reads empty may be in the middle
    of `execve` (its parent's Popen has returned, its new image's environment is not set
    up yet, as right after `worker start` starts again with its key): read again for up
    to EXEC_WAIT_S."""
    deadline = time.monotonic() + EXEC_WAIT_S
    while not (environ := process.environ()) and time.monotonic() < deadline:
        time.sleep(EXEC_POLL_S)
    return environ


def is_corral_process(
    pid: int,
    *,
    key_hash: str | None,
    started_s: float | None,
    registered_at_s: float,
    env_name: str = WORKER_KEY_ENV,
) -> bool:
    """Whether `pid` is the process recorded with `key_hash` (a worker's runner, or with
    `env_name` ORCHESTRATOR_KEY_ENV an orchestrator), started at `started_s` (or, when
    that is unknown, by `registered_at_s`)."""
    try:
        process = psutil.Process(pid)
        return _started_as_recorded(process, started_s, registered_at_s) and holds_key(
            process, env_name, key_hash
        )
    except psutil.Error:  # gone, or not ours to read: not provably ours either
        return False


def runs_as_recorded(pid: int, *, started_s: float | None, registered_at_s: float) -> bool:
    """Whether `pid` runs and started when recorded (`_started_as_recorded`): no proof that
    it is corral's, but never a later process given the same pid. Enough to show what a
    worker registered without a key reported of itself; never enough to signal it."""
    try:
        return _started_as_recorded(psutil.Process(pid), started_s, registered_at_s)
    except psutil.Error:
        return False


def _started_as_recorded(
    process: psutil.Process, started_s: float | None, registered_at_s: float
) -> bool:
    """Whether `process` runs (no zombie) and started when recorded: at `started_s`, or by
    `registered_at_s` when no start time was recorded."""
    created = process.create_time()
    if process.status() == psutil.STATUS_ZOMBIE:
        return False
    if started_s is not None:
        return abs(created - started_s) <= START_SLACK_S
    return bool(created <= registered_at_s + 1.0)


def signal_if_corral(
    pid: int,
    sig: signal.Signals,
    *,
    key_hash: str | None,
    started_s: float | None,
    registered_at_s: float,
) -> bool:
    """Send `sig` to `pid` if it is provably the worker's runner (`is_corral_process`);
    False if it is not (or has gone), and then nothing was sent."""
    return signal_if_proven(
        pid,
        sig,
        lambda: is_corral_process(
            pid, key_hash=key_hash, started_s=started_s, registered_at_s=registered_at_s
        ),
    )


def signal_if_proven(pid: int, sig: signal.Signals, proven: Callable[[], bool]) -> bool:
    """Send `sig` to `pid` if `proven()`, asked once a pidfd names the process, says it is
    corral's; False if it is not (or has gone), and then nothing was sent."""
    try:
        fd = fastpaths.pidfd_open(pid)
        # Without pidfds, psutil's handle checks the start time before it signals.
        handle = psutil.Process(pid) if fd is None else None
    except (OSError, psutil.NoSuchProcess):  # gone
        return False
    try:
        if not proven():
            return False
        if fd is not None:
            signal.pidfd_send_signal(fd, sig)
        elif handle is not None:
            handle.send_signal(sig)
        return True
    except (ProcessLookupError, psutil.NoSuchProcess):
        return False
    finally:
        if fd is not None:
            with suppress(OSError):
                os.close(fd)
