"""Run commands: runs, run show, logs. A run is one attempt at a task (corral.model.runs)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from contextlib import suppress
from typing import BinaryIO

from corral.cli import paging, render
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.foundation.clock import SystemClock
from corral.foundation.errors import Refused
from corral.model.artifacts import artifacts_dir
from corral.store.location import is_inside, runs_dir

# How often `logs --follow` looks for new output and for the end of the run.
FOLLOW_POLL_S = 0.2
_CHUNK_BYTES = 64 * 1024


def cmd_runs(ctx: Context) -> int:
    """List runs, newest first."""
    a = ctx.args
    ask = paging.ask(ctx, "runs", key_size=1, default_limit=50)
    found = ctx.store.runs.list_runs(
        task_id=a.task,
        worker_id=a.worker,
        limit=ask.read or 0,
        before_seq=None if ask.after is None else ask.after[0],
    )
    total = ctx.store.runs.count_runs(task_id=a.task, worker_id=a.worker) if ask.count else None
    page = ask.page(found, lambda r: (r.seq,), total)
    paging.emit(ctx, ask, page, lambda: render.run_table(page.items, ctx.store.now()) or "no runs")
    return 0


def cmd_run_show(ctx: Context) -> int:
    """Show one run in full."""
    run = ctx.store.runs.get_run(ctx.args.id)
    artifacts = ctx.store.artifacts.run_artifacts(run.id)
    human = render.run_detail(run)
    if artifacts:
        human += "\n" + render.artifacts(artifacts, artifacts_dir(run.transcript_path))
    ctx.emit(
        {
            **run.to_dict(),
            "artifacts": [a.to_dict() for a in artifacts],
            "artifacts_dir": artifacts_dir(run.transcript_path) if artifacts else None,
        },
        human,
    )
    return 0


def cmd_logs(ctx: Context) -> int:
    """Print a run's transcript (or stderr); with --follow, until the run ends."""
    a = ctx.args
    run = ctx.store.runs.get_run(a.id)
    what = "stderr" if a.stderr else "transcript"
    if ctx.store.dialect == "http":
        return _remote_logs(ctx, run.id, what)
    path = run.stderr_path if a.stderr else run.transcript_path
    if path is None:
        raise Refused(f"run {run.id} recorded no {what} file")
    if not is_inside(path, runs_dir(ctx.db)):  # a row can name any file: read only corral's
        raise Refused(f"the {what} of run {run.id} is not in this store's runs folder: {path}")
    if a.follow:
        copied = follow(path, None, lambda: ctx.store.runs.get_run(run.id).finished)
    else:
        copied = copy_from(path, 0, sys.stdout.buffer)
    if copied is None:
        raise Refused(f"the {what} of run {run.id} is missing: {path} does not exist")
    return 0


def _remote_logs(ctx: Context, run_id: str, stream: str) -> int:
    """The server's copy of a run's output (a remote runner's, sent as it was written, or
    the server's own file), chunk by chunk; with --follow, until the run ends."""
    from corral.store.remote.transport import HttpTransport  # remote only

    store = ctx.store
    transport = store.transport
    assert isinstance(transport, HttpTransport)
    offset, out, clock = 0, sys.stdout.buffer, SystemClock()
    while True:
        done = not ctx.args.follow or store.runs.get_run(run_id).finished
        while chunk := transport.read_output(run_id, stream, offset):
            out.write(chunk)
            offset += len(chunk)
        out.flush()
        if done:
            return 0
        clock.sleep(FOLLOW_POLL_S)


def follow(path: str, offset: int | None, finished: Callable[[], bool]) -> int | None:
    """Copy new bytes of `path` as they come until `finished()` and the file is drained;
    the offset reached, or None if the file never appeared.

    `finished` is asked before each copy, so whatever was written before it turned true is
    printed. A file that shrank was rotated (copied and truncated): it is read from the start.
    """
    clock = SystemClock()
    while True:
        done = finished()
        with suppress(OSError):
            if offset is not None and os.path.getsize(path) < offset:
                offset = 0
        copied = copy_from(path, offset or 0, sys.stdout.buffer)
        offset = offset if copied is None else copied
        if done:
            return offset
        clock.sleep(FOLLOW_POLL_S)


def copy_from(path: str, offset: int, out: BinaryIO) -> int | None:
    """Write the file's bytes from `offset` on to `out`; the new offset, or None if no file."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, after the missing-file case
    except FileNotFoundError:
        return None
    except IsADirectoryError:
        raise Refused(f"{path} is a directory, not a log file") from None
    with handle:
        handle.seek(offset, os.SEEK_SET)
        while chunk := handle.read(_CHUNK_BYTES):
            out.write(chunk)
            offset += len(chunk)
    out.flush()
    return offset


COMMANDS = (
    Command(
        "runs",
        cmd_runs,
        "list runs (attempts at tasks), newest first",
        Arg("--task", metavar="ID", help="only runs of this task"),
        Arg("--worker", metavar="ID", help="only runs by this worker"),
        *paging.args(50),
    ),
    Command("run show", cmd_run_show, "show a run in full", Arg("id", metavar="RUN_ID")),
    Command(
        "logs",
        cmd_logs,
        "print a run's transcript or stderr",
        Arg("id", metavar="RUN_ID"),
        Arg("--stderr", action="store_true", help="the stderr file, not the transcript"),
        Arg(
            "--follow", action="store_true", help="keep printing new output until the run finishes"
        ),
    ),
)
