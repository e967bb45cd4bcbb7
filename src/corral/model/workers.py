"""Worker records (`NewWorker`, `Worker`) and the liveness rule.

A heartbeat counts as missed half an interval after it was due, so a worker that beats on
time but a little late is never stale; idle and busy follow the worker's active claims.
The worker state machine is in corral.model.states.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.documents import MAX_INT32
from corral.durations import iso
from corral.errors import InvalidInput
from corral.model.namespaces import DEFAULT_NAMESPACE
from corral.model.providers import check_provider
from corral.model.states import WorkerStatus
from corral.model.tasks import check_names

if TYPE_CHECKING:  # annotations only: keeps settings off the CLI's import path
    from corral.policies import LivenessPolicy


@dataclass(frozen=True, slots=True, kw_only=True)
class NewWorker:
    """What `register` needs; validated on construction."""

    name: str
    hostname: str = field(default_factory=lambda: os.uname().nodename)
    # Its own process, if it has one (a runner gives its pid): at most one live worker per
    # (namespace, host, pid), so a process registered twice is refused while the first
    # lives. None (an in-process worker of the Python API, a test) is never a twin.
    pid: int | None = None
    version: str = ""
    queues: tuple[str, ...] = ()
    kinds: tuple[str, ...] = ()
    max_concurrent: int = 1
    labels: dict[str, str] = field(default_factory=dict)
    # When process `pid` started (corral.processes.started_at), if it runs on this host.
    pid_started_at: float | None = None
    provider: str | None = None  # the provider account its agents spend (model/providers.py)

    def __post_init__(self) -> None:
        if not self.name.strip() or len(self.name) > 100 or not self.name.isprintable():
            raise InvalidInput("name", "a name of 1 to 100 printable characters", self.name)
        if isinstance(self.max_concurrent, bool) or not 1 <= self.max_concurrent <= MAX_INT32:
            raise InvalidInput(
                "max_concurrent", f"a whole number from 1 to {MAX_INT32}", self.max_concurrent
            )
        if self.pid is not None and not 1 <= self.pid <= MAX_INT32:
            raise InvalidInput("pid", f"a whole number from 1 to {MAX_INT32}", self.pid)
        check_names("kind", self.kinds)
        check_names("queue", self.queues)
        if self.provider is not None:
            check_provider(self.provider)


@dataclass(frozen=True, slots=True, kw_only=True)
class Worker:
    """A worker as the store last saw it; `active` counts its active claims."""

    id: str
    name: str
    hostname: str
    pid: int | None
    version: str
    queues: tuple[str, ...]
    kinds: tuple[str, ...]
    max_concurrent: int
    labels: dict[str, str]
    status: WorkerStatus
    registered_at: datetime
    last_heartbeat_at: datetime
    active: int
    completed_total: int
    failed_total: int
    offline_reason: str | None
    cpu_percent: float | None
    rss_bytes: int | None
    pid_started_at: float | None = None  # see NewWorker; not in the JSON shape
    provider: str | None = None
    namespace: str = DEFAULT_NAMESPACE  # where it registered, and the only one it claims in

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "id": self.id,
            "name": self.name,
            "namespace": self.namespace,
            "status": str(self.status),
            "hostname": self.hostname,
            "pid": self.pid,
            "version": self.version,
            "queues": list(self.queues),
            "kinds": list(self.kinds),
            "max_concurrent": self.max_concurrent,
            "labels": self.labels,
            "active": self.active,
            "completed_total": self.completed_total,
            "failed_total": self.failed_total,
            "registered_at": iso(self.registered_at),
            "last_heartbeat_at": iso(self.last_heartbeat_at),
            "offline_reason": self.offline_reason,
            "cpu_percent": self.cpu_percent,
            "rss_bytes": self.rss_bytes,
            "provider": self.provider,
        }


def missed_heartbeats(elapsed_s: float, policy: LivenessPolicy) -> int:
    """Heartbeats missed after `elapsed_s` of silence (each one half an interval late)."""
    return max(0, int(elapsed_s / policy.heartbeat_interval_s - 0.5))


def liveness(elapsed_s: float, policy: LivenessPolicy) -> WorkerStatus | None:
    """`dead`, `stale`, or None (healthy) for a worker silent for `elapsed_s`."""
    missed = missed_heartbeats(elapsed_s, policy)
    if missed >= policy.dead_after_missed:
        return WorkerStatus.DEAD
    return WorkerStatus.STALE if missed >= 1 else None


def working_status(active_claims: int) -> WorkerStatus:
    """idle or busy, from the number of active claims."""
    return WorkerStatus.BUSY if active_claims else WorkerStatus.IDLE
