"""Worker commands: worker register | heartbeat | deregister | drain | list | status | attach."""

from __future__ import annotations

import os
import sys
from contextlib import suppress

from corral.cli import paging, parsing, worker_flags
from corral.cli.commands import Arg, Command, status_filter
from corral.cli.context import Context
from corral.foundation import fastpaths
from corral.foundation.durations import format_duration
from corral.foundation.errors import InvalidInput, Refused
from corral.foundation.ids import WORKER_PREFIX
from corral.foundation.process_keys import own_key_hash
from corral.foundation.records import replace
from corral.model.states import GONE, REGISTRY_STATUSES, WorkerStatus, worker_statuses
from corral.model.workers import MAX_CPU_PERCENT, BeatFigures, NewWorker, WorkerFilter
from corral.usecases import workers

STATUSES = [str(s) for s in WorkerStatus]
# What `--status` takes: corral's statuses, then the registry's groups (seed 002).
STATUS_NAMES = STATUSES + [name.upper() for name in REGISTRY_STATUSES] + ["online"]
MB = 1024 * 1024
MAX_MEMORY_MB = 1e9  # a petabyte: past any host, and far within the store's bigint


def caller_pid() -> int:
    """The worker loop that ran this command: the calling shell, or, when that shell is
    the subshell bash forks for a `$(...)`, the shell that reads its output.

    A `$(...)` subshell lives only as long as the substitution, so the recorded pid would
    name a process already gone; walk up past it. Such a subshell is a fork (its parent's
    command line) whose standard output is a pipe that its parent reads. A `( ... ) &`
    subshell is a fork too, but writes where its parent writes: it is a loop of its own
    (seed 000's parallel workers), so the walk stops there and each registers apart.
    """
    pid = os.getppid()
    with suppress(OSError):  # no /proc (not Linux), or a process ended: stop where we are
        while pid > 1:
            parent = _parent_pid(pid)
            if parent <= 1 or not _substitutes_for(pid, parent):
                break
            pid = parent
    return pid


def _substitutes_for(pid: int, parent: int) -> bool:
    """Whether `pid` is a `$(...)` subshell of `parent`: forked from it (its command line)
    and writing to a pipe that it reads."""
    return _cmdline(pid) == _cmdline(parent) and _reads_output(parent, pid)


def _parent_pid(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return int(handle.read().rsplit(b")", 1)[1].split()[1])


def _cmdline(pid: int) -> bytes:
    with open(f"/proc/{pid}/cmdline", "rb") as handle:
        return handle.read()


def _reads_output(reader: int, writer: int) -> bool:
    """Whether `writer`'s standard output is a pipe of which `reader` holds the read end.

    Both ends of a pipe name the same `pipe:[inode]`, and a `( ... ) &` subshell's parent
    may hold the write end of the very pipe it writes to too (its own stdout): only a
    descriptor opened for reading (fdinfo's access mode) counts.
    """
    output = os.readlink(f"/proc/{writer}/fd/1")
    if not output.startswith("pipe:"):
        return False
    for fd in os.listdir(f"/proc/{reader}/fd"):
        with suppress(OSError):  # a descriptor closed while we look
            if os.readlink(f"/proc/{reader}/fd/{fd}") == output and _read_only(reader, fd):
                return True
    return False


def _read_only(pid: int, fd: str) -> bool:
    """Whether descriptor `fd` of `pid` is open for reading only (O_RDONLY)."""
    with open(f"/proc/{pid}/fdinfo/{fd}", "rb") as handle:
        for line in handle:
            if line.startswith(b"flags:"):
                return int(line.split()[1], 8) & os.O_ACCMODE == os.O_RDONLY
    return False


def cmd_register(ctx: Context) -> int:
    """Register a worker and print its id."""
    a = ctx.args
    pid = parsing.whole("pid", a.pid, minimum=1) if a.pid is not None else caller_pid()
    spec = NewWorker(
        name=a.name,
        kinds=tuple(a.kind or ()),
        queues=tuple(a.queue or ()),
        max_concurrent=parsing.whole("max_concurrent", a.max_concurrent, minimum=1) or 1,
        labels=parsing.labels("label", a.label),
        version=a.version or "",
        pid=pid,
        pid_started_at=None if pid is None else _started_at(pid),
        key_hash=own_key_hash(),
    )
    beat = workers.register(ctx.store, spec, settings=ctx.settings)
    ctx.emit(beat.to_dict() | {"worker": beat.worker.to_dict()}, beat.worker.id)
    return 0


def _started_at(pid: int) -> float | None:
    """When process `pid` started, None if it does not run here: from /proc where there is
    one, else from psutil, whose import is a fifth of `worker register`'s imports."""
    try:
        found = fastpaths.started_at_s(pid)
    except ProcessLookupError:
        return None
    if found is None:
        from corral.foundation.processes import started_at  # psutil: see the docstring

        return started_at(pid)
    return found


def cmd_heartbeat(ctx: Context) -> int:
    """Heartbeat, with the figures given; answers the interval to keep and whether to drain."""
    beat = workers.heartbeat(ctx.store, ctx.args.id, figures=_figures(ctx), settings=ctx.settings)
    drain = "; drain requested" if beat.drain else ""
    every = format_duration(beat.heartbeat_interval_s)
    human = f"{beat.worker.id} {beat.worker.status}; next heartbeat in {every}{drain}"
    ctx.emit(beat.to_dict(), human)
    return 0


def _figures(ctx: Context) -> BeatFigures:
    """The heartbeat's figures from its flags, each checked before anything is written."""
    a = ctx.args
    return BeatFigures(
        cpu_percent=parsing.amount("cpu", a.cpu, MAX_CPU_PERCENT),
        rss_bytes=_megabytes("memory_mb", a.memory_mb),
        agent_cpu_percent=parsing.amount("agent_cpu", a.agent_cpu, MAX_CPU_PERCENT),
        agent_rss_bytes=_megabytes("agent_memory_mb", a.agent_memory_mb),
        active=parsing.whole("active", a.active, minimum=0),
        completed=parsing.whole("completed", a.completed, minimum=0) or 0,
        failed=parsing.whole("failed", a.failed, minimum=0) or 0,
    )


def _megabytes(field: str, raw: str | None) -> int | None:
    """Bytes from a number of megabytes (MiB), at most a petabyte's worth."""
    mb = parsing.amount(field, raw, MAX_MEMORY_MB)
    return None if mb is None else round(mb * MB)


def cmd_deregister(ctx: Context) -> int:
    """Take a worker offline, returning its unfinished tasks to the queue."""
    worker = workers.deregister(ctx.store, ctx.args.id)
    ctx.emit(worker.to_dict(), f"{worker.id} offline")
    return 0


def cmd_drain(ctx: Context) -> int:
    """Ask a worker to finish what it holds and take nothing new."""
    worker = workers.drain(ctx.store, ctx.args.id)
    ctx.emit(worker.to_dict(), f"{worker.id} draining")
    return 0


def cmd_list(ctx: Context) -> int:
    """List workers, by status, queue, kind, host and labels, a page at a time."""
    from corral.cli import render  # human text only

    a = ctx.args
    ask = paging.ask(ctx, workers.WORKER_LISTING, key_size=1, default_limit=None)
    flt = WorkerFilter(
        statuses=_statuses(a.status),
        queue=a.queue,
        kind=a.kind,
        host=a.host,
        labels=parsing.labels("label", a.label),
        after_seq=None if ask.after is None else ask.after[0],
        limit=ask.limit,
    )
    from corral.runtime.pool.measured import measured  # figures only of live runners

    found = workers.page(ctx.store, flt, count=ask.count)
    page = replace(found, items=measured(found.items))
    now = ctx.store.now()
    paging.emit(ctx, ask, page, lambda: render.worker_table(page.items, now) or "no workers")
    return 0


def _statuses(names: list[str] | None) -> tuple[WorkerStatus, ...]:
    try:
        return worker_statuses(names or ())
    except ValueError as exc:
        raise InvalidInput("status", f"one of {', '.join(STATUS_NAMES)}", str(exc)) from None


def cmd_show(ctx: Context) -> int:
    """One worker in full: its figures (its own and its agents'), totals and deltas too."""
    from corral.cli import render  # human text only
    from corral.runtime.pool.measured import measured  # figures only of live runners

    (worker,) = measured([ctx.store.workers.get_worker(ctx.args.id)])
    data = worker.to_dict()
    ctx.emit(data, render.key_values(data))
    return 0


def cmd_status(ctx: Context) -> int:
    """One worker in full, or every worker that is not offline."""
    from corral.cli import render  # human text only

    if ctx.args.id:
        return cmd_show(ctx)
    from corral.runtime.pool.measured import measured  # figures only of live runners

    live = measured(workers.live(ctx.store))
    ctx.emit_all(live, lambda: render.worker_table(live, ctx.store.now()) or "no live workers")
    return 0


def cmd_start(ctx: Context) -> int:
    """Run a worker in this process until it is stopped; its exit code is the command's."""
    from corral.cli.worker_start import start_worker  # not on heartbeat's path

    return start_worker(ctx)


def cmd_stop(ctx: Context) -> int:
    """Signal a worker's runner: SIGTERM with --graceful, else SIGQUIT (stop now)."""
    from corral.runtime.pool import control  # not on heartbeat's path

    stop = control.stop_worker(ctx.store, ctx.args.id, graceful=ctx.args.graceful)
    if stop.signal is None:
        human = f"{stop.worker_id} asked to drain"
    else:
        human = f"sent {stop.signal} to {stop.worker_id} (pid {stop.pid})"
    ctx.emit(stop.to_dict(), human)
    return 0


def cmd_logs(ctx: Context) -> int:
    """Print a pool worker's log file (by worker id or slot name); --follow keeps printing."""
    from corral.cli.run_cmds import copy_from, follow  # not on heartbeat's path
    from corral.runtime.pool.control import pool_layout  # not on heartbeat's path
    from corral.store.location import path_component  # not on heartbeat's path

    ident = path_component("id", ctx.args.id)  # a slot's log is named after it: no `../x`
    worker = ctx.store.workers.get_worker(ident) if ident.startswith(WORKER_PREFIX) else None
    path = pool_layout(ctx.db).log_path(ident if worker is None else worker.name)
    offset = copy_from(path, 0, sys.stdout.buffer)
    if offset is None:
        raise Refused(f"{ident} has no pool log: {path} does not exist")
    if ctx.args.follow:  # until the worker is gone (a slot name: until Ctrl-C)
        follow(
            path,
            offset,
            lambda: worker is not None and ctx.store.workers.get_worker(worker.id).status in GONE,
        )
    return 0


def cmd_attach(ctx: Context) -> int:
    """Follow a worker's live output: its runs' transcripts, one run after another."""
    from corral.cli.worker_attach import attach  # not on heartbeat's path

    return attach(ctx)


ID = Arg("id")
KIND = Arg("--kind", action="append", help="kind it runs, repeatable (default: any)")
QUEUE = Arg("--queue", action="append", help="queue it serves, repeatable (default: any)")
LABEL = Arg("--label", action="append", metavar="K=V")

COMMANDS = (
    Command(
        "worker register",
        cmd_register,
        "register a worker (prints its id)",
        Arg("--name", required=True),
        KIND,
        QUEUE,
        Arg("--max-concurrent", help="claims it may hold at once (default 1)"),
        LABEL,
        Arg("--version"),
        Arg("--pid", help="process id to record (default: the calling script)"),
    ),
    Command(
        "worker heartbeat",
        cmd_heartbeat,
        "prove the worker lives; answers interval and drain",
        ID,
        Arg("--cpu", metavar="PCT", help="its own CPU %% (100: one core) since its last beat"),
        Arg("--memory-mb", metavar="MB", help="the worker's own resident memory"),
        Arg("--agent-cpu", metavar="PCT", help="CPU %% of its task's whole process tree"),
        Arg("--agent-memory-mb", metavar="MB", help="resident memory of that tree"),
        Arg("--active", metavar="N", help="tasks it runs now"),
        Arg("--completed", metavar="N", help="tasks it completed since its last beat"),
        Arg("--failed", metavar="N", help="tasks that failed since its last beat"),
    ),
    Command("worker deregister", cmd_deregister, "take a worker offline", ID),
    Command("worker drain", cmd_drain, "stop giving a worker new claims", ID),
    Command(
        "worker start",
        cmd_start,
        "run a worker here until stopped",
        *worker_flags.start_args(),
        customize=worker_flags.add_job_group,
    ),
    Command(
        "worker stop",
        cmd_stop,
        "stop a worker's runner (now, or --graceful)",
        ID,
        Arg("--graceful", action="store_true", help="finish the current task first (SIGTERM)"),
    ),
    Command(
        "worker logs",
        cmd_logs,
        "a pool worker's log (id or slot name)",
        Arg("id", help="worker id (w-...) or pool slot name (slot-1)"),
        Arg("--follow", action="store_true", help="keep printing until the worker is gone"),
    ),
    Command(
        "worker attach",
        cmd_attach,
        "follow a worker's live output, run after run",
        Arg("worker", metavar="NAME|ID", help="worker id (w-...) or name"),
    ),
    Command(
        "worker list",
        cmd_list,
        "list workers",
        status_filter(STATUS_NAMES),
        Arg("--queue", help="only workers that serve this queue"),
        Arg("--kind", help="only workers that run this kind"),
        Arg("--host", help="only workers on this host"),
        Arg("--label", action="append", metavar="K=V", help="only workers with it, repeatable"),
        *paging.args(None),
    ),
    Command("worker show", cmd_show, "one worker in full, with its figures", ID),
    Command(
        "worker status",
        cmd_status,
        "one worker, or every one not offline",
        Arg("id", nargs="?"),
    ),
)
