"""The live screen of `corral status --watch`: curses, from the standard library.

`curses.wrapper` owns the terminal: it enters the alternate screen and cbreak mode, and
whatever ends the loop (q, Ctrl-C's KeyboardInterrupt, SIGTERM, an error) it leaves them,
so the shell gets its screen and cursor back. The loop reads at most once an interval and
redraws at once on a resize (ncurses turns SIGWINCH into KEY_RESIZE and resizes the
screen), so a resize costs no store read.
"""

from __future__ import annotations

import curses
import signal
from collections.abc import Callable
from contextlib import suppress
from types import FrameType
from typing import TYPE_CHECKING

from corral.cli.watch_layout import screen
from corral.foundation.clock import Clock
from corral.runtime import signals

if TYPE_CHECKING:
    from corral.runtime.pool.glance import Glance

Read = Callable[[int], tuple["Glance | None", str | None]]
_QUIT_KEYS = frozenset({ord("q"), ord("Q")})
_LONGEST_WAIT_MS = 1000  # curses takes an int of ms; a long interval is waited in pieces


class _Terminated(Exception):
    """SIGTERM arrived: leave the screen as q does."""


def _terminate(_signum: int, _frame: FrameType | None) -> None:
    raise _Terminated


def run(read: Read, interval_s: float, clock: Clock) -> int:
    """Show the screen until q, Ctrl-C or SIGTERM; exit code 0."""
    with suppress(KeyboardInterrupt, _Terminated), signals.handled((signal.SIGTERM,), _terminate):
        curses.wrapper(_loop, read, interval_s, clock)
    return 0


def _loop(window: curses.window, read: Read, interval_s: float, clock: Clock) -> None:
    with suppress(curses.error):  # a terminal that cannot hide its cursor shows it
        curses.curs_set(0)
    found, notice = None, None
    due = clock.monotonic()
    while True:
        height, width = window.getmaxyx()
        if clock.monotonic() >= due:
            found, notice = read(height)
            due = clock.monotonic() + interval_s
        lines = screen(found, width=width, height=height, interval_s=interval_s, notice=notice)
        _draw(window, lines)
        wait_ms = int((due - clock.monotonic()) * 1000)
        window.timeout(max(1, min(_LONGEST_WAIT_MS, wait_ms)))
        if window.getch() in _QUIT_KEYS:
            return


def _draw(window: curses.window, lines: list[str]) -> None:
    window.erase()
    for row, line in enumerate(lines):
        # Writing the bottom-right cell moves the cursor past the screen: curses reports it
        # as an error after drawing the line, which is all that was wanted.
        with suppress(curses.error):
            window.addstr(row, 0, line, curses.A_BOLD if row == 0 else curses.A_NORMAL)
    window.refresh()
