"""Reading every namespace at once: the one store operation that crosses them."""

from __future__ import annotations

from corral.model.namespaces import NamespaceCounts
from corral.store.driver import Driver


class NamespaceOps:
    """The namespaces a store serves."""

    _driver: Driver

    def namespace_counts(self) -> list[NamespaceCounts]:
        """Every namespace with a task or a worker: its tasks by status and its live workers,
        by name (one snapshot)."""
        with self._driver.read() as tx:
            rows = tx.all("namespace_counts")
        tasks: dict[str, dict[str, int]] = {}
        live: dict[str, int] = {}
        for row in rows:
            counts = tasks.setdefault(row["namespace"], {})
            if row["status"] is None:
                live[row["namespace"]] = int(row["n"] or 0)
            else:
                counts[row["status"]] = int(row["n"])
        return [
            NamespaceCounts(name=name, tasks=counts, workers_live=live.get(name, 0))
            for name, counts in sorted(tasks.items())
        ]
