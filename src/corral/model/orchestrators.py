"""The orchestrator's state row and its pool slots: records, states, and who holds the row.

    orchestrator:  stopped ──start (compare-and-set)──► starting ──pool up──► running
                   running | starting ──stop / SIGTERM──► stopping ──pool gone──► stopped
                   a holder that died (its pid gone on its host, or its heartbeat too old)
                   is replaced by the next start, by compare-and-set on what it observed

    slot:          starting ──worker registered──► running ──exit──► backoff ──delay──► starting
                   backoff past max_restarts ──► failed ──max_restart_delay──► starting (fresh)
                   any ──stop──► stopping ──exit──► stopped

One orchestrator holds a store's row at a time; `holder_is_dead` is the pure rule a new
one applies before it tries the compare-and-set.

On PostgreSQL several orchestrators (one per host) each hold a member row, taken by the
same rule; the one holding the leader lock leads and takes the state row:

    member:        (none) | stopped | dead holder ──join──► running, standby
                   standby ──leader lock taken──► leader ──lock lost──► standby
                   running ──stop──► stopping ──pool gone──► stopped
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from corral.foundation.durations import iso
from corral.foundation.records import field, record
from corral.model.states import WorkerStatus
from corral.model.workers import liveness

if TYPE_CHECKING:  # annotations only: keeps settings off the CLI's import path
    from corral.foundation.policies import LivenessPolicy

# How long a graceful stop lets running tasks finish when no timeout is given: the
# orchestrator's own SIGTERM, and `orchestrator stop --graceful`.
DEFAULT_STOP_TIMEOUT_S = 300.0


class OrchestratorStatus(StrEnum):
    """Where the store's orchestrator is in its life."""

    STOPPED = "stopped"
    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"


LIVE = frozenset(
    {OrchestratorStatus.STARTING, OrchestratorStatus.RUNNING, OrchestratorStatus.STOPPING}
)
STOPPABLE = frozenset({OrchestratorStatus.STARTING, OrchestratorStatus.RUNNING})


class Role(StrEnum):
    """What one of several orchestrators on a PostgreSQL store does."""

    LEADER = "leader"  # holds the leader lock: reconciles, and holds the state row
    STANDBY = "standby"  # runs its pool; tries the lock every reconcile interval


class SlotState(StrEnum):
    """Where one pool slot is."""

    STARTING = "starting"
    RUNNING = "running"
    BACKOFF = "backoff"
    FAILED = "failed"
    STOPPING = "stopping"
    STOPPED = "stopped"


@record(frozen=True, slots=True, kw_only=True)
class OrchestratorState:
    """The state row: who holds it, since when, and the pool it last reported."""

    status: OrchestratorStatus
    pid: int | None
    host: str | None
    started_at: datetime | None
    heartbeat_at: datetime | None
    last_reconcile_at: datetime | None
    stopped_at: datetime | None
    stop_timeout_s: float | None
    config: dict[str, Any] = field(default_factory=dict)
    slots: list[dict[str, Any]] = field(default_factory=list)
    # The SHA-256 of the key in the holder's environment (foundation/processes.py): what
    # proves its pid before `orchestrator stop` signals it. Not in the JSON shape.
    key_hash: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `orchestrator status --json` (docs/cli.md)."""
        return {
            "status": str(self.status),
            "pid": self.pid,
            "host": self.host,
            "started_at": iso(self.started_at),
            "heartbeat_at": iso(self.heartbeat_at),
            "last_reconcile_at": iso(self.last_reconcile_at),
            "stopped_at": iso(self.stopped_at),
            "stop_timeout_s": self.stop_timeout_s,
            "config": self.config,
            "slots": self.slots,
        }


@record(frozen=True, slots=True, kw_only=True)
class OrchestratorMember:
    """One orchestrator of a PostgreSQL store (a row of `orchestrators`, one per host)."""

    host: str
    pid: int
    role: Role
    status: OrchestratorStatus
    started_at: datetime
    heartbeat_at: datetime
    stopped_at: datetime | None

    def to_dict(self, *, dead: bool = False) -> dict[str, Any]:
        """An entry of `orchestrators` in `orchestrator status --json` (docs/cli.md);
        a live-looking member that went silent shows status `dead`."""
        return {
            "host": self.host,
            "pid": self.pid,
            "role": str(self.role),
            "status": "dead" if dead else str(self.status),
            "started_at": iso(self.started_at),
            "heartbeat_at": iso(self.heartbeat_at),
        }


def holder_is_dead(
    state: OrchestratorState | OrchestratorMember,
    *,
    now: datetime,
    host: str,
    pid_alive: Callable[[int], bool],
    policy: LivenessPolicy,
) -> bool:
    """Whether the row's live holder is gone: its pid ended on this host, or it went silent.

    Silence uses the workers' rule (`dead_after_missed` heartbeats missed), so a holder on
    another host is judged as its workers would be.
    """
    if state.status not in LIVE:
        return False
    if state.host == host and state.pid is not None and not pid_alive(state.pid):
        return True
    if state.heartbeat_at is None:
        return True
    silent_s = (now - state.heartbeat_at).total_seconds()
    return liveness(silent_s, policy) is WorkerStatus.DEAD


def fleet(
    state: OrchestratorState,
    members: list[OrchestratorMember],
    *,
    now: datetime,
    policy: LivenessPolicy,
) -> dict[str, Any]:
    """`leader` (the host that leads, or None) and `orchestrators` (each one not stopped:
    host, pid, role, status), for `orchestrator status`.

    With no member rows (SQLite, where orchestrators never join) the state row's live
    holder is the one orchestrator, and it leads. A member silent for the dead window
    shows status `dead` until the next orchestrator of its host takes its row.
    """
    leader = state.host if state.status in LIVE else None
    if not members:
        only = [] if leader is None else [_sole(state)]
        return {"leader": leader, "orchestrators": only}
    shown = []
    for member in members:
        if member.status is OrchestratorStatus.STOPPED:
            continue
        silent_s = (now - member.heartbeat_at).total_seconds()
        dead = liveness(silent_s, policy) is WorkerStatus.DEAD
        shown.append(member.to_dict(dead=dead))
    return {"leader": leader, "orchestrators": shown}


def _sole(state: OrchestratorState) -> dict[str, Any]:
    return {
        "host": state.host,
        "pid": state.pid,
        "role": str(Role.LEADER),
        "status": str(state.status),
        "started_at": iso(state.started_at),
        "heartbeat_at": iso(state.heartbeat_at),
    }
