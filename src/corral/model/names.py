"""The names people give queues, kinds, workers' capabilities and provider accounts.

They are checked where they enter (a new task, a new worker, a flag or an HTTP body). The
checks live apart from the records that carry the names so that a command building one
record (a worker's) does not build the others' classes (bench/cli_latency.py).
"""

from __future__ import annotations

import re
from typing import Any

from corral.foundation.errors import InvalidInput

PROVIDER_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.-]{0,62}(:[a-z0-9][a-z0-9_.-]{0,62})?")


def check_names(field_name: str, values: tuple[str, ...]) -> None:
    """Each of a worker's kinds or queues, as `check_name` checks one."""
    for value in values:
        check_name(field_name, value)


def check_name(field_name: str, value: str) -> None:
    """Queue, kind and worker names: short, printable, no spaces."""
    if not value or len(value) > 100 or not value.isprintable() or " " in value:
        raise InvalidInput(
            field_name, "a name of 1 to 100 printable characters without spaces", value
        )


def check_worker_name(field_name: str, value: str) -> None:
    """A worker's name, and so an assignee (which names a worker): 1 to 100 printable
    characters, not all spaces."""
    if not value.strip() or len(value) > 100 or not value.isprintable():
        raise InvalidInput(field_name, "a name of 1 to 100 printable characters", value)


def check_provider(name: Any) -> str:
    """A provider account's name (`claude`, `claude:work`), or InvalidInput."""
    if not isinstance(name, str) or not PROVIDER_PATTERN.fullmatch(name):
        raise InvalidInput(
            "provider", "a name such as claude or claude:work (lowercase, digits, . _ -)", name
        )
    return name
