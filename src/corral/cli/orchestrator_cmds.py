"""`corral orchestrator start | status | stop`: the store's one orchestrator and its pool."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from corral.cli import parsing, render, worker_flags
from corral.cli.admin_cmds import REPO, cmd_reconcile
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.cli.keyed_start import start_again_with_a_key
from corral.foundation.errors import InvalidInput
from corral.foundation.process_keys import ORCHESTRATOR_KEY_ENV
from corral.model.names import check_name
from corral.usecases import orchestrators

if TYPE_CHECKING:
    from corral.cli.context import Args


def cmd_start(ctx: Context) -> int:
    """Run the orchestrator here (or, with --daemon, in the background) until stopped."""
    _use_config(ctx.args.config)
    if not ctx.args.daemon:  # the detached one is given its key (control.daemonize)
        start_again_with_a_key(ORCHESTRATOR_KEY_ENV)
    from corral.runtime.pool import control, foreground  # status starts without it

    settings = ctx.settings.with_flags(_pool_flags(ctx.args, bool(ctx.settings.pool_groups)))
    host = os.uname().nodename if ctx.args.hostname is None else ctx.args.hostname
    check_name("hostname", host)  # shown in every status line: one printable word
    orchestrator = foreground.prepare(ctx.store, db=ctx.db, settings=settings, host=host)
    ctx.long_running()  # every flag checked: from here on it runs
    ctx.keep_state_out_of_git()  # its logs, and its workers' runs
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


def _use_config(path: str | None) -> None:
    """`--config FILE`: the settings come from FILE, as with CORRAL_CONFIG, which this
    process (and so its workers, and `--daemon`'s detached copy) then has."""
    if path is None:
        return
    if not os.path.isfile(path):
        raise InvalidInput("config", "the path of an existing TOML file", path)
    os.environ["CORRAL_CONFIG"] = os.path.abspath(path)


def _pool_flags(a: Args, grouped: bool) -> dict[str, Any]:
    """The pool's flags given, by setting name; they win over `[pool]` keys."""
    values = worker_flags.given(a)
    jobs = ("pool_exec", "pool_call", "pool_agent")
    for job in jobs:
        if job in values:  # a job given replaces the file's others (--agent generic: its --exec)
            for other in jobs:
                values.setdefault(other, "")
    if a.workers is not None and grouped:
        expected = "no --workers with [[pool.group]] (each group has its own workers)"
        raise InvalidInput("workers", expected, a.workers)
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
        from corral.cli import watch  # curses and the loops: --watch only

        return watch.watch(ctx)
    from corral.runtime.pool.overview import overview  # psutil: not for the others

    found = overview(ctx.store, settings=ctx.settings)
    ctx.emit(found.to_dict(), render.overview(found))
    return 0


def cmd_stop(ctx: Context) -> int:
    """Mark the orchestrator stopping, signal it, and wait until it has stopped."""
    from corral.runtime.pool import control  # status starts without it

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
        Arg("--config", metavar="FILE", help="read the settings from FILE (as CORRAL_CONFIG)"),
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
    # Seed 000 names the maintenance pass `orchestrator reconcile`: its scripts run as written.
    Command("orchestrator reconcile", cmd_reconcile, "the same pass as `corral reconcile`", REPO),
    Command(
        "status",
        cmd_overview,
        "one screen: orchestrator, pool, workers, queues, tasks",
        Arg("--watch", action="store_true", help="redraw until q or Ctrl-C (a live screen)"),
        Arg("--interval", metavar="DURATION", help="with --watch: time between redraws (1s)"),
    ),
)
