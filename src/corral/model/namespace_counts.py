"""What `corral namespace list` shows of one namespace (model/namespaces.py says what a
namespace is)."""

from __future__ import annotations

from typing import Any

from corral.foundation.records import field, record


@record(frozen=True, slots=True, kw_only=True)
class NamespaceCounts:
    """One namespace as `corral namespace list` shows it: its tasks by status, its live
    workers."""

    name: str
    tasks: dict[str, int] = field(default_factory=dict)
    workers_live: int = 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape (docs/cli.md, namespace list)."""
        return {
            "name": self.name,
            "tasks": dict(sorted(self.tasks.items())),
            "tasks_total": sum(self.tasks.values()),
            "workers_live": self.workers_live,
        }
