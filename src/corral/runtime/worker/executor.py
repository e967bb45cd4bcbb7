"""One task command, run to completion in a session of its own; nothing about stores or claims.

The model:
- The command is started in a session of its own (spawn.py: posix_spawn or Popen): it
  leads a new session and a new process group whose id is its pid, so one `killpg`
  reaches it and every descendant that stayed in the group. Nothing is run through a
  shell.
- stdout goes to the transcript file and stderr to the stderr file, written by the OS as
  the child prints; nothing passes through this process. A prompt that fits in a pipe's
  guaranteed capacity is written to stdin at once; a larger one from a thread (it must
  not block the watch). Then stdin is closed.
- The watch waits on a pidfd, so it wakes the moment the child exits, and looks every
  `poll_s` on the injected clock (without pidfds: polls that start fast and double up to
  `poll_s`): the caller's `stop()` ends the run (STOPPED), then `timeout_s` (TIMEOUT),
  then a stall: no growth of transcript + stderr for `stall_timeout_s` calls
  `on_stall()` once per episode and, with `kill_stalled`, ends the run (STALLED). An
  episode ends when the output grows again.
- Exit is detected with `waitid(WNOWAIT)`, which does not reap: the child's pid, and so
  its group id, cannot be reused by another process while the tree is being ended. The
  child is reaped last, always.
- Ending the tree, after a kill decision and after a normal exit alike ("no orphaned
  grandchildren"): collect the targets first, while parents still link to their children
  (the child's descendants, plus every process of the run that escaped them); SIGTERM the
  group and each target; wait up to `grace_s`; SIGKILL the group and the survivors.
- Escaped processes: a grandchild that called `setsid` has left the group, and one whose
  parent died is re-parented, so neither `killpg` nor a walk of the child's tree finds
  it. The process running commands makes itself a child subreaper (proctree.py), so
  those orphans become its own children, found there by their `CORRAL_RUN_ID=<run_id>`
  mark and reaped by pid. Where that is not available, every process on the machine
  started since the child is scanned for the mark, and a process found so is signalled
  only if it runs as this user and holds this runner's runs key (`CORRAL_RUN_KEY`, set
  here in every command's environment; the runner's own key, CORRAL_WORKER_KEY, is
  never passed on: foundation/processes.py). Either way a process that cleared its
  environment escapes the mark: only a cgroup could catch that one.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass

# psutil ships no type information; its stubs (types-psutil) are not a dependency.
import psutil

from corral.foundation import fastpaths, filemodes
from corral.foundation.clock import Clock
from corral.foundation.process_keys import OWN_KEYS, RUN_KEY_ENV, key_digest, runs_key
from corral.foundation.processes import holds_key
from corral.runtime.worker import proctree, spawn
from corral.runtime.worker.reports import Ending
from corral.runtime.worker.spares import Spares
from corral.runtime.worker.spawn import Child

RUN_ID_ENV = "CORRAL_RUN_ID"
STDERR_TAIL_BYTES = 2048
# After SIGKILL, how long to wait for the processes to be gone before returning anyway.
KILL_WAIT_S = 1.0
FIRST_POLL_S = 0.0001  # short commands (`true`) end in under a millisecond
PIPE_BYTES = 4096  # a write this small to a new pipe never blocks (POSIX: PIPE_BUF at least)


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandSpec:
    """What to run, where, with what input and output, and the bounds on its run.

    `env` is the child's whole environment; `CORRAL_RUN_ID=run_id` is set in it whatever
    the caller gave, since it is how escaped descendants are found.
    """

    argv: tuple[str, ...]
    stdin_text: str | None
    env: dict[str, str]
    cwd: str
    transcript_path: str
    stderr_path: str
    run_id: str
    timeout_s: float | None = None
    stall_timeout_s: float | None = None
    kill_stalled: bool = False
    grace_s: float = 5.0
    # Words run in place of argv's program, argv after them: a sandbox's engine
    # (sandbox.py), which runs the command in a namespace of its own and ends with it.
    wrapper: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CommandResult:
    """How a command ended, its exit code, and the tail of its stderr."""

    ending: Ending
    exit_code: int | None
    duration_s: float
    stalled: bool
    stderr_tail: str
    stop_reason: str | None = None


@dataclass(slots=True)
class _Watch:
    """What the poll loop tracks between polls."""

    started_at: float
    output_size: int = -1
    grown_at: float = 0.0
    in_stall: bool = False
    stalled: bool = False
    stop_reason: str | None = None


def run_command(
    spec: CommandSpec,
    *,
    clock: Clock,
    stop: Callable[[], str | None],
    on_stall: Callable[[], None] | None = None,
    on_resume: Callable[[], None] | None = None,
    poll_s: float = 0.05,
    spares: Spares | None = None,
) -> CommandResult:
    """Run `spec` to its end, kill its whole tree on stop, timeout or stall, and reap it.

    With `spares`, the output files are taken from those made ahead of time.
    """
    watch = _Watch(started_at=clock.monotonic())
    adopting = proctree.available()
    with proctree.spawning() as owned:
        proc, stdin = _spawn(spec, spares)
        owned.add(proc.pid)
    if spares is not None:
        spares.refill()
    feeder = _start_feeder(stdin, spec.stdin_text)
    since = 0.0 if adopting else _create_time(proc.pid)
    try:
        ending = _supervise(
            proc.pid,
            spec,
            watch,
            clock=clock,
            stop=stop,
            on_stall=on_stall,
            on_resume=on_resume,
            poll_s=poll_s,
        )
    finally:
        ended = _end_tree(proc.pid, spec, since, clock, poll_s)
        exit_code = proc.reap()
        proctree.release(proc.pid)
        if adopting and ended:  # what it ended may now be zombies the runner adopted
            proctree.reap_adopted()
            proctree.reap_group(proc.pid, clock=clock, within_s=KILL_WAIT_S)
        if feeder is not None:
            feeder.join(timeout=spec.grace_s)
    return CommandResult(
        ending=ending,
        exit_code=exit_code,
        duration_s=clock.monotonic() - watch.started_at,
        stalled=watch.stalled,
        stderr_tail=_tail(spec.stderr_path),
        stop_reason=watch.stop_reason,
    )


def _spawn(spec: CommandSpec, spares: Spares | None) -> tuple[Child, int | None]:
    """Start the command, its output going straight to the run's files; the child and the
    write end of its stdin pipe (None without a prompt)."""
    if spares is not None:
        spares.take(spec.transcript_path, spec.stderr_path)  # else created below
    # The marks that find escaped descendants, and prove them the run's (the runs key);
    # never the runner's (or an orchestrator's) own key: a task must not pass for them.
    env = {k: v for k, v in spec.env.items() if k not in OWN_KEYS}
    env |= {RUN_ID_ENV: spec.run_id, RUN_KEY_ENV: runs_key()}
    # Raw descriptors, not file objects: each buffered one costs three more system calls.
    fds: list[int] = []
    feed = None
    try:
        fds += [_open_output(spec.transcript_path), _open_output(spec.stderr_path)]
        if spec.stdin_text is None:
            fds.insert(0, os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
        else:
            read_end, feed = os.pipe()
            fds.insert(0, read_end)
        argv = (*spec.wrapper, *spec.argv)
        child = spawn.start(argv, env=env, cwd=spec.cwd, stdio=(fds[0], fds[1], fds[2]))
    except BaseException:
        if feed is not None:
            os.close(feed)
        raise
    finally:
        for fd in fds:
            os.close(fd)
    return child, feed


def _open_output(path: str) -> int:
    """A descriptor that writes `path` from its start, created if it is not there."""
    return filemodes.open_file(path, os.O_WRONLY | os.O_TRUNC)


def _start_feeder(pipe: int | None, text: str | None) -> threading.Thread | None:
    """Write the prompt to the child's stdin, then close it: at once when it fits in the
    pipe (the write cannot block), else from a thread, so the watch starts regardless."""
    if pipe is None or text is None:
        return None
    data = text.encode()
    if len(data) <= PIPE_BYTES:
        _feed(pipe, data)
        return None
    feeder = threading.Thread(target=_feed, args=(pipe, data), daemon=True)
    feeder.start()
    return feeder


def _feed(pipe: int, data: bytes) -> None:
    """Write `data` and close; a child that exits without reading it all is not an error."""
    view = memoryview(data)
    with suppress(OSError):  # EPIPE: the child is gone or closed its stdin
        while view:
            view = view[os.write(pipe, view) :]
    os.close(pipe)


def _supervise(
    pid: int,
    spec: CommandSpec,
    watch: _Watch,
    *,
    clock: Clock,
    stop: Callable[[], str | None],
    on_stall: Callable[[], None] | None,
    on_resume: Callable[[], None] | None,
    poll_s: float,
) -> Ending:
    """Poll until the child exits or a reason to end it comes up.

    Where pidfds exist the wait wakes the moment the child exits; elsewhere the polls
    start fast and double up to `poll_s`.
    """
    pidfd = _pidfd(pid)
    delay_s = min(FIRST_POLL_S, poll_s)
    try:
        while not _has_exited(pid):
            ending = _check(spec, watch, clock.monotonic(), stop, (on_stall, on_resume))
            if ending is not None:
                return ending
            if pidfd is None:
                clock.sleep(delay_s)
                delay_s = min(delay_s * 2, poll_s)
            else:
                clock.wait_readable(pidfd, poll_s)
        return Ending.EXITED
    finally:
        if pidfd is not None:
            os.close(pidfd)


def _pidfd(pid: int) -> int | None:
    """A pidfd for the child (Linux 5.3+), readable once it exits; None where there is none."""
    try:
        return fastpaths.pidfd_open(pid)
    except ProcessLookupError:
        return None


def _check(
    spec: CommandSpec,
    watch: _Watch,
    now: float,
    stop: Callable[[], str | None],
    hooks: tuple[Callable[[], None] | None, Callable[[], None] | None],
) -> Ending | None:
    """The reason to end the run now, if there is one; reports a stall and its end."""
    watch.stop_reason = stop()
    if watch.stop_reason is not None:
        return Ending.STOPPED
    if spec.timeout_s is not None and now - watch.started_at >= spec.timeout_s:
        return Ending.TIMEOUT
    on_stall, on_resume = hooks
    was_stalled = watch.in_stall
    if not _stall_began(spec, watch, now):
        if was_stalled and not watch.in_stall and on_resume is not None:
            on_resume()
        return None
    if on_stall is not None:
        on_stall()
    return Ending.STALLED if spec.kill_stalled else None


def _stall_began(spec: CommandSpec, watch: _Watch, now: float) -> bool:
    """Whether a stall episode starts at this poll; growth of the output ends an episode."""
    if spec.stall_timeout_s is None:
        return False
    size = _size(spec.transcript_path) + _size(spec.stderr_path)
    if size != watch.output_size:
        watch.output_size, watch.grown_at, watch.in_stall = size, now, False
        return False
    if watch.in_stall or now - watch.grown_at < spec.stall_timeout_s:
        return False
    watch.in_stall = watch.stalled = True
    return True


def _size(path: str) -> int:
    """The file's size in bytes, 0 if it is gone."""
    try:
        return os.stat(path).st_size
    except OSError:
        return 0


def _has_exited(pid: int) -> bool:
    """Whether the child has exited, without reaping it: its pid stays reserved."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # reaped by someone else (SIGCHLD ignored)
        return True


def _end_tree(pid: int, spec: CommandSpec, since: float, clock: Clock, poll_s: float) -> bool:
    """SIGTERM the child's group and every process of the run, wait `grace_s`, SIGKILL the
    rest; whether there was more than an exited child to end."""
    running = not _has_exited(pid)
    targets = _targets(pid, spec.run_id, since, running=running)
    _signal_group(pid, signal.SIGTERM)
    _signal_each(targets, signal.SIGTERM)
    survivors = _wait_gone(pid, targets, clock.monotonic() + spec.grace_s, clock, poll_s)
    _signal_group(pid, signal.SIGKILL)
    with suppress(ProcessLookupError):  # the child may have moved to another group
        os.kill(pid, signal.SIGKILL)
    _signal_each(survivors, signal.SIGKILL)
    _wait_gone(pid, survivors, clock.monotonic() + KILL_WAIT_S, clock, poll_s)
    return running or bool(targets)


def _targets(pid: int, run_id: str, since: float, *, running: bool) -> list[psutil.Process]:
    """The child's live descendants and every other process marked with the run id."""
    if proctree.available():
        pids = proctree.tree(pid) if running else []
        pids += proctree.adopted(f"{RUN_ID_ENV}={run_id}".encode())
        return _processes(set(pids) - {pid})
    found = {p.pid: p for p in _descendants(pid)} if running else {}
    marked = _marked(run_id, key_digest(runs_key()), since)
    found.update((p.pid, p) for p in marked if p.pid != pid)
    return list(found.values())


def _processes(pids: set[int]) -> list[psutil.Process]:
    """psutil handles for the pids that still exist."""
    found = []
    for pid in pids:
        with suppress(psutil.Error):
            found.append(psutil.Process(pid))
    return found


def _descendants(pid: int) -> list[psutil.Process]:
    """The process's descendants, as far as they still link to it."""
    try:
        children: list[psutil.Process] = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    return children


def _marked(run_id: str, runs_key_hash: str | None, since: float) -> list[psutil.Process]:
    """Processes started since `since` whose environment has `CORRAL_RUN_ID=run_id` and the
    runs key whose hash is `runs_key_hash`, run as corral's user (foundation/processes.py:
    a mark alone is no proof). A process started since a run began that reads as an empty
    environment may be in the middle of `execve` (a `setsid sleep` as its shell exits): it
    is read again for a moment (proctree.marked); older ones, kernel threads among them,
    are not waited for."""
    me, mark, found = os.getpid(), f"{RUN_ID_ENV}={run_id}".encode(), []
    exec_wait_s = proctree.EXEC_WAIT_S if since > 0 else 0.0
    for proc in psutil.process_iter():
        with suppress(psutil.Error):  # gone, a zombie, or not ours to read
            if (
                proc.pid != me
                and proc.create_time() >= since
                and proctree.marked(proc.pid, mark, exec_wait_s=exec_wait_s)
                and holds_key(proc, RUN_KEY_ENV, runs_key_hash)
            ):
                found.append(proc)
    return found


def end_marked_processes(
    run_id: str,
    runs_key_hash: str | None,
    *,
    clock: Clock,
    grace_s: float = 5.0,
    poll_s: float = 0.05,
) -> int:
    """End every process of run `run_id` left by a runner that died, proved by the runs key
    whose hash its worker recorded (None: none is proved); how many there were.

    SIGTERM, up to `grace_s` for them to go, then SIGKILL: the same as a run's own tree.
    """
    targets = _marked(run_id, runs_key_hash, 0.0)
    end_processes(targets, clock=clock, grace_s=grace_s, poll_s=poll_s)
    return len(targets)


def end_processes(
    targets: list[psutil.Process], *, clock: Clock, grace_s: float, poll_s: float = 0.05
) -> None:
    """SIGTERM to each of `targets`, up to `grace_s` for them to go, then SIGKILL. A
    psutil.Process signals only the process it was made for, never a later one given the
    same pid."""
    _signal_each(targets, signal.SIGTERM)
    deadline = clock.monotonic() + grace_s
    while any(_alive(p) for p in targets) and clock.monotonic() < deadline:
        clock.sleep(poll_s)
    _signal_each([p for p in targets if _alive(p)], signal.SIGKILL)


def _create_time(pid: int) -> float:
    """When the child was started, on the same scale as other processes' create times."""
    try:
        created: float = psutil.Process(pid).create_time()
    except psutil.Error:
        return 0.0
    return created


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """Send `sig` to the child's process group, if anything is left in it."""
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _signal_each(procs: list[psutil.Process], sig: signal.Signals) -> None:
    """Send `sig` to each process; one that is gone already is skipped."""
    for proc in procs:
        with suppress(psutil.Error):
            proc.send_signal(sig)


def _wait_gone(
    pid: int, procs: list[psutil.Process], deadline: float, clock: Clock, poll_s: float
) -> list[psutil.Process]:
    """Wait until the child and `procs` have ended, or the deadline; the ones still alive."""
    delay_s = min(FIRST_POLL_S, poll_s)
    while True:
        alive = [proc for proc in procs if _alive(proc)]
        if (not alive and _has_exited(pid)) or clock.monotonic() >= deadline:
            return alive
        clock.sleep(delay_s)
        delay_s = min(delay_s * 2, poll_s)


def _alive(proc: psutil.Process) -> bool:
    """Whether the process still runs (a zombie has ended)."""
    try:
        return bool(proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE)
    except psutil.Error:
        return False


def _tail(path: str) -> str:
    """The last `STDERR_TAIL_BYTES` of the file, decoded; a character cut in half is dropped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return ""
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, STDERR_TAIL_BYTES, max(0, size - STDERR_TAIL_BYTES)) if size else b""
    except OSError:
        return ""
    finally:
        os.close(fd)
    if len(data) == STDERR_TAIL_BYTES:
        data = data.lstrip(bytes(range(0x80, 0xC0)))  # continuation bytes of a cut character
    return data.decode(errors="replace")
