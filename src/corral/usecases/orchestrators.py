"""Use case of the orchestrator's rows: what `orchestrator status` (and `corral status`) shows.

The state row says who holds the store and the pool it last reported; on PostgreSQL the
member rows say which orchestrators run and which one leads (corral.model.orchestrators).
Running, stopping and daemonising an orchestrator are process control: runtime/pool/control.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.model.orchestrators import OrchestratorState, fleet
from corral.store import Store

if TYPE_CHECKING:  # annotations only: the policy records are built by Settings (policies)
    from corral.foundation.policies import LivenessPolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class OrchestratorReport:
    """The state row, the leader and every orchestrator not stopped, as read at `now`."""

    state: OrchestratorState
    leader: str | None
    orchestrators: list[dict[str, Any]]
    now: datetime

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `orchestrator status --json` (docs/cli.md)."""
        return {**self.state.to_dict(), "leader": self.leader, "orchestrators": self.orchestrators}


def status(store: Store, *, liveness: LivenessPolicy) -> OrchestratorReport:
    """The orchestrator's rows now; a member silent past `liveness`'s dead window shows `dead`."""
    now = store.now()
    state = store.orchestrators.get_orchestrator()
    members = fleet(state, store.orchestrators.list_orchestrators(), now=now, policy=liveness)
    return OrchestratorReport(
        state=state, leader=members["leader"], orchestrators=members["orchestrators"], now=now
    )
