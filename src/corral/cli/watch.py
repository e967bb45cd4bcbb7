"""`corral status --watch [--interval DURATION]`: the status again and again until stopped.

On a terminal it is a live screen (watch_screen: curses, laid out by watch_layout from the
bounded reads of corral.runtime.pool.glance). Anywhere else (a pipe, a file) it prints the
`corral status` text once per interval, each block under a `=== time ===` line, or with
--json the `corral status --json` object on one line per interval; SIGINT or SIGTERM ends
it with exit 0. A store that cannot be read is a notice (on the screen, or a block or an
`{"error": ...}` line) and is read again at the next interval: watching outlives an outage.

Imported only with --watch, so `corral status` starts as fast as before.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
from typing import TYPE_CHECKING

from corral.cli import parsing, render
from corral.foundation.clock import SystemClock
from corral.foundation.durations import format_duration
from corral.foundation.errors import InvalidInput, StoreError
from corral.runtime import signals

if TYPE_CHECKING:
    from corral.cli.context import Context
    from corral.runtime.pool.glance import Glance

DEFAULT_INTERVAL_S = 1.0
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def watch(ctx: Context) -> int:
    """Check the flags, open the store (a missing one fails at once), then watch."""
    if not ctx.args.watch:
        raise InvalidInput("interval", "to be given with --watch")
    interval_s = parsing.positive_duration("interval", ctx.args.interval) or DEFAULT_INTERVAL_S
    ctx.long_running()
    ctx.store  # noqa: B018 - opened before watching: no store at all is an error, not an outage
    if sys.stdout.isatty() and sys.stdin.isatty() and not ctx.json:
        from corral.cli import watch_screen  # curses: the screen only

        return watch_screen.run(Reader(ctx, interval_s).read, interval_s, SystemClock())
    return repeat(ctx, interval_s)


class Reader:
    """Reads the screen's data; keeps the last good read through a store outage and says so."""

    def __init__(self, ctx: Context, interval_s: float) -> None:
        self._ctx = ctx
        self._interval_s = interval_s
        self._last: Glance | None = None

    def read(self, rows: int) -> tuple[Glance | None, str | None]:
        """The data for a screen of `rows` lines and a notice: None, or why it is old."""
        from corral.runtime.pool.glance import glance  # psutil-free, but heavy

        try:
            self._last = glance(
                self._ctx.store, settings=self._ctx.settings, running_limit=rows, events_limit=rows
            )
        except StoreError as exc:
            return self._last, _outage(exc, self._interval_s)
        return self._last, None


def repeat(ctx: Context, interval_s: float) -> int:
    """Print a snapshot every `interval_s` until SIGINT or SIGTERM; exit code 0."""
    stop = threading.Event()
    clock = SystemClock()
    with signals.relayed(_STOP_SIGNALS, lambda _signum, _frame: stop.set()):
        while not stop.is_set():
            sys.stdout.write(snapshot(ctx, interval_s))
            sys.stdout.flush()
            clock.wait(stop, interval_s)
    return 0


def snapshot(ctx: Context, interval_s: float) -> str:
    """One block of `corral status` text (one JSON line with --json), or the outage notice."""
    from corral.runtime.pool.overview import overview  # psutil, as `status`

    try:
        found = overview(ctx.store, settings=ctx.settings)
    except StoreError as exc:
        notice = _outage(exc, interval_s)
        if ctx.json:
            return json.dumps({"error": notice}) + "\n"
        return f"=== {SystemClock().now():%Y-%m-%d %H:%M:%S} UTC ===\n{notice}\n\n"
    if ctx.json:
        return json.dumps(found.to_dict()) + "\n"
    stamp = f"{found.orchestrator.now:%Y-%m-%d %H:%M:%S} UTC"
    return f"=== {stamp} ===\n{render.overview(found)}\n\n"


def _outage(exc: StoreError, interval_s: float) -> str:
    first_line = exc.message.splitlines()[0] if exc.message else "unavailable"
    return f"store unavailable, retrying every {format_duration(interval_s)}: {first_line}"
