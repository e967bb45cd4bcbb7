"""Use case of seed 001's heartbeats: every slot's, from the worker registry and the active
claims, read at each call (model/heartbeats.py maps corral's worker states onto the seed's).

Read from the store, not kept by the server: every `serve` process of a store answers the
same, and the liveness the reconciler judges is the one shown.
"""

from __future__ import annotations

from typing import Any

from corral.model.heartbeats import heartbeats
from corral.store import Store

# Active claims read: far more than any pool holds at once.
MAX_CLAIMS = 10_000


def slots(store: Store) -> dict[str, dict[str, Any]]:
    """Each slot's heartbeat, by slot."""
    return heartbeats(store.list_workers(), store.running_tasks(MAX_CLAIMS))
