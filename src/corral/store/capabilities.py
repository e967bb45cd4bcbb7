"""What a worker may claim, as query parameters: its declared kinds and queues, and itself.

The claim queries and `ready --worker` filter with these inside SQL, so a worker never
receives a task it cannot run (no claim-then-give-back, "type poisoning").
"""

from __future__ import annotations

from typing import Any, Protocol


class Capable(Protocol):
    """What the filters read of a worker: a `Worker`, or the exchange's slimmer claimant."""

    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def kinds(self) -> tuple[str, ...]: ...
    @property
    def queues(self) -> tuple[str, ...]: ...


def _narrow(declared: tuple[str, ...], asked: tuple[str, ...]) -> list[str] | None:
    """Names to filter on: None means any; [] means nothing can match.

    A worker that declared nothing runs anything; what a caller asks for narrows the
    worker's declaration and never widens it.
    """
    if not declared:
        return list(asked) or None
    return [n for n in declared if n in asked] if asked else list(declared)


def capability_filters(
    worker: Capable, kinds: tuple[str, ...], queues: tuple[str, ...]
) -> dict[str, Any]:
    """`worker_id`, `worker_name` (for assignees), `kinds` and `queues` for the queries."""
    return {
        "worker_id": worker.id,
        "worker_name": worker.name,
        "kinds": _narrow(worker.kinds, kinds),
        "queues": _narrow(worker.queues, queues),
    }


def matches_nothing(filters: dict[str, Any]) -> bool:
    """True when the narrowed kinds or queues are empty, so no task can match."""
    return bool(filters["kinds"] == [] or filters["queues"] == [])
