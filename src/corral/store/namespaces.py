"""Reading every namespace at once: the one store operation that crosses them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.store.operations import Repository

if TYPE_CHECKING:
    from corral.model.namespace_counts import NamespaceCounts


class Namespaces(Repository):
    """The namespaces a store serves."""

    NAME = "namespaces"

    def namespace_counts(self) -> list[NamespaceCounts]:
        """Every namespace with a task or a worker: its tasks by status and its live workers,
        by name (one snapshot)."""
        # Off every other command's start-up: only `namespace list` builds these.
        from corral.model.namespace_counts import NamespaceCounts  # noqa: PLC0415

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
