"""Use cases of namespaces: what `corral namespace list` shows (model/namespaces.py says
what a namespace isolates)."""

from __future__ import annotations

from corral.model.namespace_counts import NamespaceCounts
from corral.store import Store


def list_namespaces(store: Store) -> list[NamespaceCounts]:
    """Every namespace with a task or a worker, with its counts; the handle's own namespace
    is listed even while it is empty."""
    found = store.namespaces.namespace_counts()
    if all(n.name != store.namespace for n in found):
        found = sorted([*found, NamespaceCounts(name=store.namespace)], key=lambda n: n.name)
    return found
