"""Worker records (`NewWorker`, `Worker`) and the liveness rule.

A heartbeat counts as missed half an interval after it was due, so a worker that beats on
time but a little late is never stale; idle and busy follow the worker's active claims.
The worker state machine is in corral.model.states.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.documents import MAX_INT32, MAX_INT64
from corral.durations import iso
from corral.errors import InvalidInput
from corral.model.namespaces import DEFAULT_NAMESPACE
from corral.model.providers import check_provider
from corral.model.states import WorkerStatus
from corral.model.tasks import check_names

if TYPE_CHECKING:  # annotations only: keeps settings off the CLI's import path
    from corral.policies import LivenessPolicy


MAX_SITE_CHARS = 4351  # a DNS name (255), a colon and a Linux path (4095)


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
    # Where it runs tasks in worktrees, `<hostname>:<clone>` (TaskWorktrees.site): a task
    # kept at that site waits for a live worker of it (docs/review.md, Where a task runs
    # again). None: it runs no task in a worktree.
    site: str | None = None

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
        if self.site is not None and not (
            0 < len(self.site) <= MAX_SITE_CHARS and self.site.isprintable()
        ):
            raise InvalidInput(
                "site",
                f"a host and a folder of at most {MAX_SITE_CHARS} printable characters",
                self.site,
            )


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
    # The last heartbeat's figures beyond the runner's own (BeatFigures).
    agent_cpu_percent: float | None = None
    agent_rss_bytes: int | None = None
    reported_active: int | None = None
    completed_delta: int = 0
    failed_delta: int = 0
    reported_completed_total: int = 0
    reported_failed_total: int = 0
    seq: int = 0  # its place in registration order: the key `worker list` pages by
    namespace: str = DEFAULT_NAMESPACE  # where it registered, and the only one it claims in
    site: str | None = None  # see NewWorker

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
            "site": self.site,
            "agent_cpu_percent": self.agent_cpu_percent,
            "agent_rss_bytes": self.agent_rss_bytes,
            "reported_active": self.reported_active,
            "completed_delta": self.completed_delta,
            "failed_delta": self.failed_delta,
            "reported_completed_total": self.reported_completed_total,
            "reported_failed_total": self.reported_failed_total,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerFilter:
    """Which workers `worker list` shows: each filter off when empty. A worker with no
    queues (kinds) serves every queue (kind); `labels` pairs must all be among its own."""

    statuses: tuple[WorkerStatus, ...] = ()
    queue: str | None = None
    kind: str | None = None
    host: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    after_seq: int | None = None  # the page before's last worker (Worker.seq)
    limit: int | None = None  # None: every one


MAX_CPU_PERCENT = 1e6  # percent of one core, summed over the cores of the biggest host


@dataclass(frozen=True, slots=True, kw_only=True)
class BeatFigures:
    """What a heartbeat may say besides "alive" (seed 000's `metrics`, seed 002's deltas);
    each figure None (or 0) when the worker has none.

    cpu_percent and rss_bytes are the runner's own process; agent_* are the whole process
    trees of the tasks it runs (the agent and every descendant), which is what costs.
    completed and failed count the tasks it finished since its beat before: deltas, so a
    beat that is lost or repeated skews the worker's reported totals by one beat only.
    """

    cpu_percent: float | None = None
    rss_bytes: int | None = None
    agent_cpu_percent: float | None = None
    agent_rss_bytes: int | None = None
    active: int | None = None
    completed: int = 0
    failed: int = 0

    def __post_init__(self) -> None:
        for name in ("cpu_percent", "agent_cpu_percent"):
            _percent(name, getattr(self, name))
        for name in ("rss_bytes", "agent_rss_bytes"):
            _count(name, getattr(self, name), MAX_INT64)
        for name in ("active", "completed", "failed"):
            _count(name, getattr(self, name), MAX_INT32)


def _percent(name: str, value: float | None) -> None:
    """A CPU figure: a finite number from 0 to MAX_CPU_PERCENT (NaN fails every bound)."""
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    if value is not None and not (ok and 0 <= value <= MAX_CPU_PERCENT):
        raise InvalidInput(name, f"a number from 0 to {MAX_CPU_PERCENT:g}", value)


def _count(name: str, value: int | None, most: int) -> None:
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= most
    ):
        raise InvalidInput(name, f"a whole number from 0 to {most}", value)


def restart_counts(found: list[Worker]) -> dict[str, int]:
    """Each worker's restart count, by id: the workers of its name on its host registered
    before it (a runner restarted under its name registers a new worker; seed 001's
    restartCount, as model/heartbeats.py counts a slot's incarnations)."""
    seen: dict[tuple[str, str], int] = {}
    counts = {}
    for worker in sorted(found, key=lambda w: (w.registered_at, w.seq)):
        slot = (worker.hostname, worker.name)
        counts[worker.id] = seen.get(slot, 0)
        seen[slot] = counts[worker.id] + 1
    return counts


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
