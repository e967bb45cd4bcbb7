"""Query parameters the list routes share: `status` (corral's task states) and `limit`.

Each bad value is InvalidInput naming its parameter (422), quoting at most a line of it.
"""

from __future__ import annotations

from corral.foundation.errors import InvalidInput
from corral.model.states import TaskStatus
from corral.server.bodies import quoted

MAX_LIMIT = 10_000
DEFAULT_LIMIT = 1000


def statuses(raw: list[str]) -> tuple[TaskStatus, ...]:
    """The task states a repeated `status` names."""
    return tuple(_status(one) for one in raw)


def _status(raw: str) -> TaskStatus:
    try:
        return TaskStatus(raw)
    except ValueError:
        raise InvalidInput("status", "one of " + ", ".join(TaskStatus), quoted(raw)) from None


def limit(raw: str | None) -> int:
    """How many to list: 1 to MAX_LIMIT, DEFAULT_LIMIT when not given."""
    if raw is None:
        return DEFAULT_LIMIT
    # The length first: int() refuses strings of thousands of digits with an error of its own.
    if len(raw) > 5 or not raw.isascii() or not raw.isdigit() or not 1 <= int(raw) <= MAX_LIMIT:
        raise InvalidInput("limit", f"a whole number from 1 to {MAX_LIMIT}", quoted(raw))
    return int(raw)
