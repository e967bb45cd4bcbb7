"""Use cases of backpressure: set a queue's limits, apply the config file's, read the load.

Limits live in the store, not in each process's settings, so that every worker and every
host enforces the same ones. `[queues.NAME]` tables of config.toml are written into the
store by `apply_configured_limits` (run by `corral init` and `orchestrator start`);
`set_queue_limits` changes one queue at once.
"""

from __future__ import annotations

from collections.abc import Mapping

from corral.foundation.errors import InvalidInput
from corral.foundation.policies import QueueLimits, check_limit
from corral.foundation.settings import Settings
from corral.model.actors import OPERATOR
from corral.model.queues import QueueStat
from corral.model.tasks import check_name
from corral.store import Store


def set_queue_limits(store: Store, queue: str, changes: Mapping[str, float | None]) -> QueueLimits:
    """Change the given limits of `queue` (None removes one), keeping the others."""
    check_name("queue", queue)
    if not changes:
        raise InvalidInput("limits", "at least one of --max-ready, --max-running, --rate")
    for name, value in changes.items():
        if value is not None:
            check_limit(name, name, value)
    return store.queues.set_queue_limits(queue, changes, actor=OPERATOR)


def apply_configured_limits(store: Store, settings: Settings) -> list[str]:
    """Write each `[queues.NAME]` of the config into the store; the queues written.

    A configured queue gets exactly the file's limits (a key left out there is no limit);
    queues the file does not name keep what the store has.
    """
    for queue, limits in sorted(settings.queues.items()):
        check_name(f"queues.{queue}", queue)
        store.queues.set_queue_limits(
            queue,
            {
                "max_ready": limits.max_ready,
                "max_running": limits.max_running,
                "rate": limits.rate,
            },
            actor=OPERATOR,
        )
    return sorted(settings.queues)


def queue_stats(store: Store, queue: str | None = None) -> list[QueueStat]:
    """Depth, load and limits of each queue with unfinished tasks or limits."""
    return store.queues.queue_stats(queue)
