"""Store operations on queue limits: set them, and read each queue's load beside them.

The limits are enforced where the work happens: `enqueue` checks max_ready and the claim
statements pass a queue by while it is at max_running or its rate, each inside its own
transaction, so no limit is checked in one transaction and relied on in another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from corral.foundation import errors
from corral.store import journal
from corral.store.driver import Row, Tx
from corral.store.operations import OPERATOR, VIEWER, Repository, served

if TYPE_CHECKING:  # built only by `queue list`: keeps the record off every command's start-up
    from corral.foundation.policies import QueueLimits
    from corral.model.queues import QueueStat

LIMIT_NAMES = ("max_ready", "max_running", "rate")


class Queues(Repository):
    """Backpressure: per-queue limits."""

    NAME = "queues"

    @served(OPERATOR)
    def set_queue_limits(
        self, queue: str, changes: Mapping[str, float | None], *, actor: str
    ) -> QueueLimits:
        """Change the named limits of `queue` (None removes one); others are kept.

        Returns the queue's limits afterwards. A queue left with no limit loses its row.
        """
        unknown = set(changes) - set(LIMIT_NAMES)
        if unknown:
            raise errors.InvalidInput(min(unknown), f"one of {', '.join(LIMIT_NAMES)}")
        params = {name: changes.get(name) for name in LIMIT_NAMES}
        keep = {f"keep_{name}": name not in changes for name in LIMIT_NAMES}
        with self._driver.write() as tx:
            row = tx.one("set_queue_limits", queue=queue, **params, **keep)
            assert row is not None
            tx.run("drop_empty_queue_limits", queue=queue)
            limits = _limits(row)
            journal.record(
                tx,
                "queue.limits",
                actor=actor,
                data={"queue": queue, **{n: getattr(limits, n) for n in LIMIT_NAMES}},
            )
        return limits

    @served(VIEWER)
    def queue_stats(self, queue: str | None = None) -> list[QueueStat]:
        """Every queue with unfinished tasks or limits (or just `queue`), by name."""
        with self._driver.read() as tx:
            return [_stat(row) for row in tx.all("queue_stats", queue=queue)]


def check_room(tx: Tx, queue: str) -> None:
    """Refuse a new task for `queue` while max_ready tasks wait in it."""
    row = tx.one("queue_room", queue=queue)
    if row is not None and row["waiting"] >= row["max_ready"]:
        raise errors.LimitReached(
            f"queue {queue!r} is full: {row['waiting']} tasks waiting, "
            f"its max_ready is {row['max_ready']}"
        )


def held_reason(tx: Tx, queue: str) -> str | None:
    """Why claims pass `queue` by right now, or None."""
    row = tx.one("queue_stats", queue=queue)
    return None if row is None else _stat(row).held


def _limits(row: Row) -> QueueLimits:
    from corral.foundation.policies import QueueLimits

    return QueueLimits(max_ready=row["max_ready"], max_running=row["max_running"], rate=row["rate"])


def _stat(row: Row) -> QueueStat:
    from corral.model.queues import QueueStat

    return QueueStat(
        queue=row["queue"],
        ready=row["ready"],
        delayed=row["delayed"],
        blocked=row["blocked"],
        running=row["running"],
        started_last_minute=row["started_last_minute"],
        limits=_limits(row),
    )
