"""The JSON bodies of the worker routes, one record each.

A body is decoded into its record by the types the fields declare (bodies.record): an
unknown field, a missing one or a wrong type is 422 naming it, true and false are not
numbers, and a list of names is a list of strings. Each record then bounds its own values
in `__post_init__`, so nothing out of a store's range (a 64-bit token, a 32-bit pid) or
past what a listing can show reaches a use case: every refusal names the field as the
body spells it (`lease_s`, `kinds`), before anything is written.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from corral.foundation.documents import MAX_INT64, whole
from corral.foundation.durations import MAX_SPAN_S
from corral.foundation.errors import InvalidInput
from corral.model.tasks import check_names
from corral.model.workers import NewWorker
from corral.server.long_poll import MAX_WAIT_S

MAX_HOSTNAME_CHARS = 255  # a DNS name's most
MAX_VERSION_CHARS = 100


def _text(name: str, value: str, most: int) -> None:
    if len(value) > most or not value.isprintable():
        raise InvalidInput(name, f"printable text of at most {most} characters", value)


def _seconds(name: str, value: float, *, least: float, most: float, zero: bool = True) -> None:
    if not least <= value <= most or (value == 0 and not zero):
        span = f"from 0 to {most:.0f}" if zero else f"more than 0 and at most {most:.0f}"
        raise InvalidInput(name, f"seconds {span}", value)


def _lease(value: float | None) -> None:
    if value is not None:
        _seconds("lease_s", value, least=0, most=MAX_SPAN_S, zero=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Registration:
    """POST /api/workers: who the worker is and what it runs. `hostname` and `pid` are the
    worker's own (none given: unknown), never the server's."""

    name: str
    queues: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    hostname: str = ""
    pid: int | None = None
    version: str = ""
    max_concurrent: int = 1
    labels: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_names("queues", self.queues)
        check_names("kinds", self.kinds)
        _text("hostname", self.hostname, MAX_HOSTNAME_CHARS)
        _text("version", self.version, MAX_VERSION_CHARS)

    def spec(self) -> NewWorker:
        """The worker to register (NewWorker checks the name, pid and max_concurrent)."""
        return NewWorker(
            name=self.name,
            hostname=self.hostname,
            pid=self.pid,
            version=self.version,
            queues=self.queues,
            kinds=self.kinds,
            max_concurrent=self.max_concurrent,
            labels=self.labels,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask:
    """POST /api/workers/{id}/claim: what to claim (within the worker's own kinds and
    queues), for how long, and how long to wait for it."""

    kinds: tuple[str, ...] = ()
    queues: tuple[str, ...] = ()
    lease_s: float | None = None
    wait_s: float = MAX_WAIT_S

    def __post_init__(self) -> None:
        check_names("kinds", self.kinds)
        check_names("queues", self.queues)
        _lease(self.lease_s)
        _seconds("wait_s", self.wait_s, least=0, most=MAX_WAIT_S)


@dataclass(frozen=True, slots=True, kw_only=True)
class Fenced:
    """A report on a claimed task, under the claim's fencing token."""

    token: int

    def __post_init__(self) -> None:
        whole("token", self.token, 1, MAX_INT64)


@dataclass(frozen=True, slots=True, kw_only=True)
class Completion(Fenced):
    """POST /api/tasks/{id}/complete: what the task produced (any JSON)."""

    result: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure(Fenced):
    """POST /api/tasks/{id}/fail: why it failed; the retry policy decides what follows."""

    error: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Deferral(Fenced):
    """POST /api/tasks/{id}/defer: ready again after `delay_s`, the attempt not counted."""

    delay_s: float
    reason: str | None = None

    def __post_init__(self) -> None:
        Fenced.__post_init__(self)
        _seconds("delay_s", self.delay_s, least=0, most=MAX_SPAN_S)


@dataclass(frozen=True, slots=True, kw_only=True)
class Release(Fenced):
    """POST /api/tasks/{id}/release: give the task back; with `attempt`, after running it
    without finishing (the attempt counts, the retry policy decides)."""

    reason: str | None = None
    attempt: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Renewal(Fenced):
    """POST /api/tasks/{id}/renew: extend the lease (by `lease_s`, else the default)."""

    lease_s: float | None = None

    def __post_init__(self) -> None:
        Fenced.__post_init__(self)
        _lease(self.lease_s)
