"""What running one task produced, before it is reported to the store.

Commands (executor.py) and Python callables (pytask.py) both end in a `Done`; the runner
turns it into one report: complete, fail, defer or release.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

DEFER_EXIT_CODE = 75  # EX_TEMPFAIL: "try again later", as sendmail and friends use it


class Ending(StrEnum):
    """How the work stopped."""

    EXITED = "exited"  # the command exited, or the function returned
    RAISED = "raised"  # the function raised
    TIMEOUT = "timeout"
    STALLED = "stalled"
    STOPPED = "stopped"  # the runner stopped it: shutdown, or the claim was lost


@dataclass(frozen=True, slots=True, kw_only=True)
class Done:
    """The result of one run, as the runner reports it."""

    ending: Ending
    success: bool
    exit_code: int | None = None
    error: str | None = None
    result: Any = None
    usage: dict[str, Any] | None = None
    stop_reason: str | None = None
    defer_s: float | None = None
