"""`corral events --follow`: the events that match, then each new one as it commits.

Imported only by `--follow`, so `corral events` starts as it did. Each event is one line
(`--json`: one JSON object, the shape of `events --json`'s items), flushed at once so a
pipe reads it as it happens. SIGINT (Ctrl-C) and SIGTERM end it with exit 0; an outage of
the store is a line on stderr while the follower retries (corral.runtime.follow).
"""

from __future__ import annotations

import json
import signal
import sys
from types import FrameType

from corral.cli import render
from corral.cli.context import Context
from corral.foundation.clock import SystemClock
from corral.model.events import Event, EventFilter
from corral.runtime import signals
from corral.runtime.follow import Follower

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def follow(ctx: Context, flt: EventFilter) -> int:
    """Print the newest matching events, then follow the log until a stop signal; 0."""
    follower = Follower(ctx.store, flt, clock=SystemClock(), on_outage=_warn)

    def on_signal(signum: int, frame: FrameType | None) -> None:
        follower.stop()

    with signals.relayed(_STOP_SIGNALS, on_signal):
        follower.run(_json_line if ctx.json else _text_line)
    return 0


def _json_line(event: Event) -> None:
    sys.stdout.write(json.dumps(event.to_dict()) + "\n")
    sys.stdout.flush()


def _text_line(event: Event) -> None:
    sys.stdout.write(render.event_line(event) + "\n")
    sys.stdout.flush()


def _warn(message: str) -> None:
    sys.stderr.write(f"corral: {message}\n")
    sys.stderr.flush()
