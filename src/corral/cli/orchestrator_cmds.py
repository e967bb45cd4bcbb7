"""`corral orchestrator start | status | stop`: the store's one orchestrator and its pool."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from corral.cli import parsing, render
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.errors import Refused
from corral.store.location import state_dir

if TYPE_CHECKING:
    from datetime import datetime

    from corral.cli.context import Args
    from corral.model.orchestrators import OrchestratorState
    from corral.settings import Settings

DEFAULT_STOP_TIMEOUT_S = 300.0
PID_FILE = "orchestrator.pid"
LOG_FILE = os.path.join("logs", "orchestrator.log")


def cmd_start(ctx: Context) -> int:
    """Run the orchestrator here (or, with --daemon, in the background) until stopped."""
    ctx.long_running()
    from corral.runtime.pool.orchestrator import Orchestrator, Placement
    from corral.runtime.pool.worker_process import Layout
    from corral.store.location import config_path

    settings = ctx.settings.with_values(_pool_flags(ctx.args), "command line")
    folder = state_dir(ctx.db)
    placement = Placement(
        db=ctx.db,
        config_path=config_path(ctx.db),
        layout=Layout(logs_dir=os.path.join(folder, "logs", "workers")),
        host=ctx.args.hostname or os.uname().nodename,
    )
    orchestrator = Orchestrator(ctx.store, settings=settings, placement=placement)  # validates
    if ctx.args.daemon:
        return _daemonize(ctx)
    pid_file = os.path.join(folder, PID_FILE)
    try:
        code = orchestrator.run(on_held=lambda: _on_held(ctx, settings, pid_file))
    finally:
        _remove_pid_file(pid_file)
    return code


def _on_held(ctx: Context, settings: Settings, pid_file: str) -> None:
    """Once this orchestrator holds the store: its pid file, and the config's queue limits."""
    from corral.queues import apply_configured_limits

    _write_pid_file(pid_file)
    apply_configured_limits(ctx.store, settings)


def _pool_flags(a: Args) -> dict[str, Any]:
    values: dict[str, Any] = {}
    if a.workers is not None:
        values["pool_workers"] = parsing.whole("workers", a.workers, minimum=1)
    if a.exec is not None:
        values["pool_exec"] = a.exec
    if a.kind:
        values["pool_kinds"] = list(a.kind)
    if a.queue:
        values["pool_queues"] = list(a.queue)
    return values


def _write_pid_file(path: str) -> None:
    # On PostgreSQL the folder is `.corral/` under the current one, which may not exist yet.
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()}\n")


def _remove_pid_file(path: str) -> None:
    try:
        with open(path, encoding="utf-8") as handle:
            mine = handle.read().strip() == str(os.getpid())
    except OSError:
        return
    if mine:
        os.unlink(path)


def _daemonize(ctx: Context) -> int:
    """Start this command again without --daemon, detached; wait until it holds the row."""
    import subprocess

    from corral.clock import SystemClock
    from corral.model.orchestrators import OrchestratorStatus

    folder = state_dir(ctx.db)
    log_path = os.path.join(folder, LOG_FILE)
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    argv = [a for a in sys.argv[1:] if a != "--daemon"]
    with open(log_path, "ab") as log:
        # S603: this same corral command line, re-run without --daemon.
        child = subprocess.Popen(  # noqa: S603
            [sys.executable, "-m", "corral.cli.main", *argv],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            env={**os.environ, "CORRAL_DB": ctx.db},
            start_new_session=True,
        )
    clock = SystemClock()
    deadline = clock.monotonic() + 30.0
    while clock.monotonic() < deadline:
        if child.poll() is not None:
            raise Refused(f"the orchestrator exited at once: {_last_line(log_path)}")
        state = ctx.store.get_orchestrator()
        standing_by = any(  # PostgreSQL: another orchestrator may lead; it joined
            m.pid == child.pid and m.status is OrchestratorStatus.RUNNING
            for m in ctx.store.list_orchestrators()
        )
        if standing_by or (state.pid == child.pid and state.status is OrchestratorStatus.RUNNING):
            ctx.emit(
                {"pid": child.pid, "log": log_path},
                f"orchestrator running in the background (pid {child.pid}); log: {log_path}",
            )
            return 0
        clock.sleep(0.05)
    raise Refused(f"the orchestrator did not start within 30 s; see {log_path}")


def _last_line(path: str) -> str:
    """The log's last line without the `corral: error: ` prefix (the child's reason)."""
    with open(path, "rb") as handle:
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4096))
        lines = handle.read().decode(errors="replace").strip().splitlines()
    return (lines[-1] if lines else f"see {path}").removeprefix("corral: error: ")


def cmd_status(ctx: Context) -> int:
    """The state row and the pool it last reported; which host leads, and every orchestrator
    (several on PostgreSQL)."""
    ctx.emit(*_orchestrators(ctx, ctx.store.now()))
    return 0


def _orchestrators(ctx: Context, now: datetime) -> tuple[dict[str, Any], str]:
    """`orchestrator status` as (JSON, human text)."""
    from corral.model.orchestrators import fleet

    state = ctx.store.get_orchestrator()
    members = fleet(state, ctx.store.list_orchestrators(), now=now, policy=ctx.settings.liveness)
    human = render.orchestrator_status(state, now)
    if members["orchestrators"]:
        human += "\n" + render.orchestrator_fleet(members)
    return {**state.to_dict(), **members}, human


def cmd_overview(ctx: Context) -> int:
    """`corral status`: the orchestrator, its pool, the live workers, the queues and the tasks."""
    from corral import reviews
    from corral.model.states import WorkerStatus
    from corral.runtime.pool import leftovers

    store = ctx.store
    now = store.now()
    orchestrators, orchestrators_human = _orchestrators(ctx, now)
    workers = [w for w in store.list_workers() if w.status is not WorkerStatus.OFFLINE]
    counts = store.task_counts()
    queues = store.queue_stats()
    waiting = reviews.pending(store, stale_after_s=ctx.settings.worktree.review_stale_after_s)
    left = leftovers.find(store)
    data = {
        "orchestrator": orchestrators,
        "workers": [w.to_dict() for w in workers],
        "queues": [q.to_dict() for q in queues],
        "reviews": [r.to_dict() for r in waiting],
        "tasks": counts,
        "leftovers": [leftover.to_dict() for leftover in left],
    }
    shown = ", ".join(f"pid {x.pid} (run {x.run_id})" for x in left)
    human = [
        orchestrators_human,
        render.worker_table(workers, now) or "workers: none live",
        render.queue_table(queues) if queues else "queues: none with work or limits",
        render.task_counts(counts),
        _reviews_line(waiting),
        f"left behind by finished runs: {shown or 'none'}",
    ]
    ctx.emit(data, "\n\n".join(human))
    return 0


def _reviews_line(reviews: list[Any]) -> str:
    """`reviews: 3 waiting (1 stale: t-abc)`: stale ones have waited past review_stale_after."""
    if not reviews:
        return "reviews: none waiting"
    stale = [r.task.id for r in reviews if r.stale]
    flagged = f" ({len(stale)} stale: {', '.join(stale)})" if stale else ""
    return f"reviews: {len(reviews)} waiting{flagged}"


def cmd_stop(ctx: Context) -> int:
    """Mark the orchestrator stopping, signal it, and wait until it has stopped."""
    import signal

    from corral.clock import SystemClock
    from corral.model.orchestrators import OrchestratorStatus
    from corral.processes import process_alive

    a = ctx.args
    grace_s = parsing.duration("timeout", a.timeout)
    grace_s = (DEFAULT_STOP_TIMEOUT_S if grace_s is None else grace_s) if a.graceful else 0.0
    state = ctx.store.get_orchestrator()
    if state.status is OrchestratorStatus.STOPPED:
        raise Refused("no orchestrator is running on this store (it is stopped)")
    if state.host != os.uname().nodename or state.pid is None:
        raise Refused(f"the orchestrator runs on {state.host} (pid {state.pid}): stop it there")
    started_s = state.started_at.timestamp() if state.started_at else 0.0
    if not process_alive(state.pid, started_s):
        raise Refused(
            f"the orchestrator (pid {state.pid}) is not running; the next start takes its place"
        )
    ctx.store.request_orchestrator_stop(stop_timeout_s=grace_s)
    os.kill(state.pid, signal.SIGTERM)
    clock = SystemClock()
    deadline = clock.monotonic() + grace_s + ctx.settings.kill_timeout_s + 30.0
    final = ctx.store.get_orchestrator()
    while _still_held(final, state) and clock.monotonic() < deadline:
        if not process_alive(state.pid, started_s):
            break
        clock.sleep(0.05)
        final = ctx.store.get_orchestrator()
    if _still_held(final, state):
        raise Refused(f"the orchestrator (pid {state.pid}) did not stop; it is {final.status}")
    ctx.emit(final.to_dict(), f"orchestrator stopped (pid {state.pid})")
    return 0


def _still_held(now: OrchestratorState, stopping: OrchestratorState) -> bool:
    """Whether the row is still the stopping orchestrator's and not stopped. On PostgreSQL a
    standby may take the row the moment it is stopped: the stop has happened then too."""
    from corral.model.orchestrators import OrchestratorStatus

    same = (now.pid, now.host, now.started_at) == (
        stopping.pid,
        stopping.host,
        stopping.started_at,
    )
    return same and now.status is not OrchestratorStatus.STOPPED


COMMANDS = (
    Command(
        "orchestrator start",
        cmd_start,
        "run the orchestrator until stopped",
        Arg("--workers", help="worker processes to keep running (default pool.workers)"),
        Arg("--exec", metavar="CMD", help="command each worker runs per task (pool.exec)"),
        Arg("--kind", action="append", help="kind the workers take, repeatable"),
        Arg("--queue", action="append", help="queue the workers serve, repeatable"),
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
    Command("status", cmd_overview, "one screen: orchestrator, pool, workers, queues, tasks"),
)
