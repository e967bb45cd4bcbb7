"""Worker records (`NewWorker`, `Worker`) and the liveness rule.

A heartbeat counts as missed half an interval after it was due, 0.75 s at most
(`late_s`), so a worker that beats on time but a little late is never stale; idle and
busy follow the worker's active claims.
The worker state machine is in corral.model.states.
"""

from __future__ import annotations

import math
import os
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.foundation.documents import MAX_INT32, MAX_INT64
from corral.foundation.durations import iso
from corral.foundation.errors import InvalidInput
from corral.foundation.records import field, record
from corral.model.names import check_names, check_provider, check_worker_name
from corral.model.namespaces import DEFAULT_NAMESPACE
from corral.model.states import CLAIMING, WorkerStatus

if TYPE_CHECKING:  # annotations only: keeps settings off the CLI's import path
    from corral.foundation.policies import LivenessPolicy


MAX_SITE_CHARS = 4351  # a DNS name (255), a colon and a Linux path (4095)
KEY_HASH_CHARS = 64  # a SHA-256 in hex


@record(frozen=True, slots=True, kw_only=True)
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
    # When process `pid` started (corral.foundation.processes.started_at), if it runs on this host.
    pid_started_at: float | None = None
    provider: str | None = None  # the provider account its agents spend (model/providers.py)
    # Where it runs tasks in worktrees, `<hostname>:<clone>` (TaskWorktrees.site): a task
    # kept at that site waits for a live worker of it (docs/review.md, Where a task runs
    # again). None: it runs no task in a worktree.
    site: str | None = None
    # The SHA-256 (hex) of the key in its runner's environment as it started, and of the
    # key its runs' processes get (foundation/processes.py): what proves a process is this
    # worker's before corral signals it. None: no process of it can be proved so.
    key_hash: str | None = None
    runs_key_hash: str | None = None

    def __post_init__(self) -> None:
        check_key_hash("key_hash", self.key_hash)
        check_key_hash("runs_key_hash", self.runs_key_hash)
        check_worker_name("name", self.name)
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


@record(frozen=True, slots=True, kw_only=True)
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
    key_hash: str | None = None  # see NewWorker; not in the JSON shape
    runs_key_hash: str | None = None  # see NewWorker; not in the JSON shape
    # When it was deregistered (went offline); None while it is registered, dead too (a
    # dead worker stays in the registry until it is deregistered).
    deregistered_at: datetime | None = None

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
            "deregistered_at": iso(self.deregistered_at),
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


@record(frozen=True, slots=True, kw_only=True)
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


@record(frozen=True, slots=True, kw_only=True)
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


def check_key_hash(name: str, value: str | None) -> None:
    """InvalidInput unless `value` is None or a SHA-256 in lowercase hex."""
    if value is not None and not (
        len(value) == KEY_HASH_CHARS and all(c in "0123456789abcdef" for c in value)
    ):
        raise InvalidInput(name, f"a SHA-256 of {KEY_HASH_CHARS} lowercase hex digits", value)


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
    restartCount, as board/model/heartbeats.py counts a slot's incarnations)."""
    seen: dict[tuple[str, str], int] = {}
    counts = {}
    for worker in sorted(found, key=lambda w: (w.registered_at, w.seq)):
        slot = (worker.hostname, worker.name)
        counts[worker.id] = seen.get(slot, 0)
        seen[slot] = counts[worker.id] + 1
    return counts


# How late a heartbeat may be before it counts as missed: half an interval, at most this.
# A worker whose every heartbeat comes on time, but for a command's start-up or a busy
# machine, is never stale; one that stops is stale this long after its heartbeat was due,
# and the reconciler marks it within a second of that (seed 002 detects a dead worker 10 s
# after its last heartbeat, at a 10 s interval; issue 30 asks for the interval and 1 s).
MAX_LATE_S = 0.75


def late_s(policy: LivenessPolicy) -> float:
    """How late a heartbeat may come before it is missed (MAX_LATE_S)."""
    return min(MAX_LATE_S, policy.heartbeat_interval_s / 2)


def missed_heartbeats(elapsed_s: float, policy: LivenessPolicy) -> int:
    """Heartbeats missed after `elapsed_s` of silence (each one `late_s` late)."""
    return max(0, int((elapsed_s - late_s(policy)) / policy.heartbeat_interval_s))


def silent_until(status: WorkerStatus, policy: LivenessPolicy) -> float:
    """Seconds of silence after which a worker of `status` is marked again: stale after
    one missed heartbeat (a draining worker is never stale), dead after
    `dead_after_missed`."""
    missed = 1 if status in CLAIMING else policy.dead_after_missed
    return missed * policy.heartbeat_interval_s + late_s(policy)


def liveness(elapsed_s: float, policy: LivenessPolicy) -> WorkerStatus | None:
    """`dead`, `stale`, or None (healthy) for a worker silent for `elapsed_s`."""
    missed = missed_heartbeats(elapsed_s, policy)
    if missed >= policy.dead_after_missed:
        return WorkerStatus.DEAD
    return WorkerStatus.STALE if missed >= 1 else None


def working_status(active_claims: int) -> WorkerStatus:
    """idle or busy, from the number of active claims."""
    return WorkerStatus.BUSY if active_claims else WorkerStatus.IDLE
