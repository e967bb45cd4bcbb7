"""`corral orchestrator start | status | stop`: the store's one orchestrator and its pool."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from corral import orchestrators
from corral.cli import parsing, render, worker_flags
from corral.cli.commands import Arg, Command
from corral.cli.context import Context

if TYPE_CHECKING:
    from corral.cli.context import Args


def cmd_start(ctx: Context) -> int:
    """Run the orchestrator here (or, with --daemon, in the background) until stopped."""
    ctx.long_running()
    from corral.runtime.pool import control, foreground  # noqa: PLC0415 - status starts without it

    settings = ctx.settings.with_flags(_pool_flags(ctx.args))
    host = ctx.args.hostname or os.uname().nodename
    orchestrator = foreground.prepare(ctx.store, db=ctx.db, settings=settings, host=host)
    if not ctx.args.daemon:
        return foreground.run(orchestrator, ctx.store, db=ctx.db, settings=settings)
    # This same command line without --daemon, detached.
    argv = [a for a in sys.argv[1:] if a != "--daemon"]
    daemon = control.daemonize(ctx.store, db=ctx.db, argv=argv)
    ctx.emit(
        daemon.to_dict(),
        f"orchestrator running in the background (pid {daemon.pid}); log: {daemon.log}",
    )
    return 0


def _pool_flags(a: Args) -> dict[str, Any]:
    """The pool's flags given, by setting name; they win over `[pool]` keys."""
    values = worker_flags.given(a)
    jobs = ("pool_exec", "pool_call", "pool_agent")
    for job in jobs:
        if job in values:  # a job given replaces the file's others (--agent generic: its --exec)
            for other in jobs:
                values.setdefault(other, "")
    if a.workers is not None:
        values["pool_workers"] = a.workers
    return values


def cmd_status(ctx: Context) -> int:
    """The state row and the pool it last reported; which host leads, and every orchestrator
    (several on PostgreSQL)."""
    report = orchestrators.status(ctx.store, liveness=ctx.settings.liveness)
    ctx.emit(report.to_dict(), render.orchestrator_report(report))
    return 0


def cmd_overview(ctx: Context) -> int:
    """`corral status`: the orchestrator, its pool, the live workers, the queues and the tasks;
    with --watch, again every --interval until stopped."""
    if ctx.args.watch or ctx.args.interval is not None:
        from corral.cli import watch  # noqa: PLC0415 - curses and the loops: --watch only

        return watch.watch(ctx)
    from corral.runtime.pool.overview import overview  # noqa: PLC0415 - psutil: not for the others

    found = overview(ctx.store, settings=ctx.settings)
    ctx.emit(found.to_dict(), render.overview(found))
    return 0


def cmd_stop(ctx: Context) -> int:
    """Mark the orchestrator stopping, signal it, and wait until it has stopped."""
    from corral.runtime.pool import control  # noqa: PLC0415 - status starts without it

    stopped = control.stop_orchestrator(
        ctx.store,
        graceful=ctx.args.graceful,
        timeout_s=parsing.duration("timeout", ctx.args.timeout),
        kill_timeout_s=ctx.settings.kill_timeout_s,
    )
    ctx.emit(stopped.to_dict(), f"orchestrator stopped (pid {stopped.pid})")
    return 0


COMMANDS = (
    Command(
        "orchestrator start",
        cmd_start,
        "run the orchestrator until stopped",
        Arg("--workers", help="worker processes to keep running (default pool.workers)"),
        *worker_flags.option_args(),
        Arg("--daemon", action="store_true", help="detach; log to .corral/logs/"),
        Arg("--hostname", help="host name recorded in the state row (default: this host)"),
    ),
    Command("orchestrator status", cmd_status, "the orchestrator and its pool"),
    Command(
        "orchestrator stop",
        cmd_stop,
        "stop the orchestrator and its workers",
        Arg("--graceful", action="store_true", help="let running tasks finish (up to --timeout)"),
        Arg("--timeout", metavar="DURATION", help="how long tasks may finish (default 5m)"),
    ),
    Command(
        "status",
        cmd_overview,
        "one screen: orchestrator, pool, workers, queues, tasks",
        Arg("--watch", action="store_true", help="redraw until q or Ctrl-C (a live screen)"),
        Arg("--interval", metavar="DURATION", help="with --watch: time between redraws (1s)"),
    ),
)
