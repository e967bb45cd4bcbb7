"""One pool worker as an operating-system process: spawn it, watch it, log it, clean up.

- A worker is `python -m corral.cli.main worker start --name SLOT ...` (the `corral worker
  start` command; not the console script, which turns garbage collection off for short
  commands) in a session and process group of its own, so a signal to the orchestrator's
  terminal or the orchestrator's death does not reach it. Its flags are the pool's worker
  options (corral.foundation.worker_options), those not at their default, each as `--flag=value`;
  `worker start` parses them back into the same options and builds its runner as every
  runner is built (runtime/worker/assembly.py).
- Its environment is the orchestrator's through the secret filter (EnvPolicy.for_worker;
  the names withheld are logged once, `orchestrator.env_withheld`), with CORRAL_DB and
  CORRAL_CONFIG (when the file exists) set, and a fresh random key in CORRAL_WORKER_KEY,
  whose hash the worker records: what proves the process is that worker to whoever
  signals it without holding it (corral.foundation.processes). Its temporary directory
  is the runner's own (`worker_tmp`: made at start, removed on stop, pruned by
  reconcile), so a pool worker and a hand-started one are cleaned the same way.
- stdout and stderr go straight to `logs/workers/SLOT.log` (opened for appending), so a
  worker keeps its log when the orchestrator dies. The orchestrator rotates the file by
  copy-and-truncate (`rotate_log`): the worker's appends then land at the new end.
- Exits are seen at once, without polling: a thread waits on each child (`waitpid`, which
  also reaps it: no zombies) or, for a worker adopted from a dead orchestrator (not our
  child), on a pidfd. Each exit is handed to `on_exit(pid, exit_code or None)`. Where
  there are no pidfds (corral.foundation.fastpaths), an adopted worker is polled, and signals go
  through psutil, which checks the process's start time first, so a reused pid is spared.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import psutil

from corral.foundation import fastpaths, filemodes
from corral.foundation.policies import WorkerOptions
from corral.foundation.process_keys import OWN_KEYS, WORKER_KEY_ENV, new_key
from corral.foundation.worker_options import OPTIONS, Option
from corral.store.location import path_component

OnExit = Callable[[int, int | None], None]
WATCH_POLL_S = 0.05  # without pidfds: how often an adopted worker is looked at


@dataclass(frozen=True, slots=True, kw_only=True)
class Process:
    """A watched worker process; `pidfd` names it safely for signals (never a reused pid),
    or, without pidfds, `handle` does (psutil checks its start time before a signal)."""

    pid: int
    pidfd: int | None
    handle: psutil.Process | None = None

    def signal(self, sig: int) -> bool:
        """Send `sig`; False if the process has ended."""
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, sig)
            elif self.handle is not None:
                self.handle.send_signal(sig)
        except (ProcessLookupError, psutil.NoSuchProcess):
            return False
        return True

    def close(self) -> None:
        """Release the pidfd, once the exit has been handled."""
        if self.pidfd is not None:
            with suppress(OSError):
                os.close(self.pidfd)


@dataclass(frozen=True, slots=True, kw_only=True)
class Layout:
    """Where a pool keeps its workers' logs."""

    logs_dir: str

    def log_path(self, name: str) -> str:
        """The worker's log file (InvalidInput for a name that would lead elsewhere)."""
        return os.path.join(self.logs_dir, f"{path_component('name', name)}.log")


def worker_argv(name: str, options: WorkerOptions) -> list[str]:
    """The command line of pool worker `name`: its options (its group's), those not at
    their default.

    The runner's own shutdown timeout is a day: the orchestrator decides when a stopping
    worker must give up its tasks (it sends SIGQUIT then).
    """
    argv = [sys.executable, "-m", "corral.cli.main", "worker", "start", "--name", name]
    argv += ["--shutdown-timeout", "1d"]
    for option in OPTIONS:
        value = getattr(options, option.field)
        if value != option.default:
            argv += _flag(option, value)
    return argv


def _flag(option: Option, value: Any) -> list[str]:
    """`value` as the option's flag (durations in bare seconds, which `worker start` reads)."""
    if option.unit == "flag":
        return [option.flag]
    if option.unit == "list":
        return [f"{option.flag}={item}" for item in value]
    return [f"{option.flag}={value}"]  # one word: a value may start with a dash


def options_in_force(options: WorkerOptions) -> dict[str, Any]:
    """Every worker option by field name, as `orchestrator status --json` shows them."""
    return {
        o.field: list(value) if isinstance(value := getattr(options, o.field), tuple) else value
        for o in OPTIONS
    }


def spawn(
    name: str,
    *,
    options: WorkerOptions,
    env: Mapping[str, str],
    layout: Layout,
    on_exit: OnExit,
) -> Process:
    """Start worker `name` in its own session. A thread reaps it and calls `on_exit`."""
    filemodes.make_dirs(layout.logs_dir)
    with open(filemodes.append(layout.log_path(name)), "ab") as log:
        # S603: a fixed argv of this Python and corral's own module, never a shell.
        proc = subprocess.Popen(  # noqa: S603
            worker_argv(name, options),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={**{k: v for k, v in env.items() if k not in OWN_KEYS}, WORKER_KEY_ENV: new_key()},
            start_new_session=True,
        )
    # Before the reaper runs: the pid cannot be reused yet.
    pidfd = fastpaths.pidfd_open(proc.pid)
    handle = None if pidfd is not None else psutil.Process(proc.pid)
    threading.Thread(
        target=_reap, args=(proc, on_exit), name=f"corral-reap-{proc.pid}", daemon=True
    ).start()
    return Process(pid=proc.pid, pidfd=pidfd, handle=handle)


def _reap(proc: subprocess.Popen[bytes], on_exit: OnExit) -> None:
    on_exit(proc.pid, proc.wait())


def watch(pid: int, on_exit: OnExit, *, proven: Callable[[], bool]) -> Process | None:
    """Watch a process that is not our child (adopted); None if it is gone already, or if
    `proven()`, asked once the pidfd names the process, says it is not the worker."""
    try:
        fd = fastpaths.pidfd_open(pid)
        handle = psutil.Process(pid) if fd is None else None
    except (ProcessLookupError, psutil.NoSuchProcess):
        return None
    if not proven():
        if fd is not None:
            os.close(fd)
        return None
    threading.Thread(
        target=_wait_exit, args=(pid, fd, handle, on_exit), name=f"corral-watch-{pid}", daemon=True
    ).start()
    return Process(pid=pid, pidfd=fd, handle=handle)


def _wait_exit(pid: int, fd: int | None, handle: psutil.Process | None, on_exit: OnExit) -> None:
    if fd is not None:
        select.select([fd], [], [])  # readable once the process has exited
    elif handle is not None:
        while handle.is_running() and handle.status() != psutil.STATUS_ZOMBIE:
            time.sleep(WATCH_POLL_S)  # no pidfd to wait on: the portable poll
    on_exit(pid, None)  # not our child: its exit code belongs to its parent (init)


def rotate_log(path: str, *, max_bytes: int, backups: int) -> bool:
    """Copy-and-truncate `path` into `path.1` (shifting older copies) once it reaches `max_bytes`.

    The writer appends (O_APPEND), so after the truncation its next line starts the
    fresh file; lines written between the copy and the truncation are lost (logrotate's
    `copytruncate` trade-off, for a writer that cannot be told to reopen).
    """
    try:
        if os.path.getsize(path) < max_bytes:
            return False
    except OSError:
        return False
    if backups == 0:
        os.truncate(path, 0)
        return True
    for n in range(backups - 1, 0, -1):
        older = f"{path}.{n}"
        if os.path.exists(older):
            os.replace(older, f"{path}.{n + 1}")
    shutil.copyfile(path, f"{path}.1")
    os.chmod(f"{path}.1", filemodes.file_mode())
    os.truncate(path, 0)
    return True
