"""Seed 001's worker heartbeats, read from corral's worker registry and active claims.

    corral worker                              seed heartbeat
    live (starting, idle, busy, draining,      working while it holds a claim (task,
      stale)                               ──► taskTitle, sessionId: its oldest), else idle
    dead, offline                          ──► offline (metadata.offlineReason)

`metadata.corralStatus` keeps the difference the seed has no word for (draining, stale).
One entry per slot: the workers of one name on one host are the incarnations of one slot
(a runner restarted under its name registers a new worker), the newest stands for it and
`restartCount` counts those before it. A name on several hosts is keyed `name@host`.
`lastUpdate` is the last heartbeat and `startedAt` the registration, in Unix ms; a stale
worker shows it by its `lastUpdate`, as the seed's watchdog reads it. `sessionId` is the
id of the run (corral's record of the agent's session) of the claim; for a claim that
started none (a seed loop's: its session is a task of its own), the id of the session
its slot spawned under it; else null.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from corral.foundation.durations import unix_ms
from corral.model.claims import RunningTask
from corral.model.states import GONE
from corral.model.workers import Worker


def heartbeats(
    workers: list[Worker], running: list[RunningTask], sessions: dict[int, str]
) -> dict[str, dict[str, Any]]:
    """The heartbeat of each slot, by slot; `running` oldest claim first, `sessions` the
    session spawned under a claim that started no run, by its fencing token."""
    slots: dict[tuple[str, str], list[Worker]] = {}
    for worker in sorted(workers, key=lambda w: w.registered_at):
        slots.setdefault((worker.hostname, worker.name), []).append(worker)
    hosts_of = Counter(name for _host, name in slots)
    held: dict[str, RunningTask] = {}
    for claim in running:
        held.setdefault(claim.worker_id, claim)
    beats = {}
    for (host, name), incarnations in slots.items():
        slot = name if hosts_of[name] == 1 else f"{name}@{host}"
        newest = incarnations[-1]
        oldest = held.get(newest.id)
        session = None if oldest is None else oldest.run_id or sessions.get(oldest.token)
        beats[slot] = heartbeat(slot, newest, len(incarnations) - 1, oldest, session)
    return beats


def heartbeat(
    slot: str, worker: Worker, restarts: int, claim: RunningTask | None, session: str | None
) -> dict[str, Any]:
    """One slot's heartbeat: its newest worker, the restarts before it, its oldest claim
    and that claim's session."""
    offline = worker.status in GONE
    working = not offline and worker.active > 0
    shown = claim if working else None
    metadata: dict[str, Any] = {
        "workerPid": None if offline else worker.pid,
        "workerVersion": worker.version,
        "restartCount": restarts,
        "workerId": worker.id,
        "hostname": worker.hostname,
        "corralStatus": str(worker.status),
    }
    if shown is not None:
        metadata["taskStartedAt"] = unix_ms(shown.claimed_at)
    if offline:
        metadata["offlineReason"] = worker.offline_reason or str(worker.status)
    return {
        "slot": slot,
        "status": "offline" if offline else "working" if working else "idle",
        "task": None if shown is None else shown.task_id,
        "taskTitle": None if shown is None else shown.title,
        "sessionId": None if shown is None else session,
        "lastUpdate": unix_ms(worker.last_heartbeat_at),
        "startedAt": unix_ms(worker.registered_at),
        "metadata": metadata,
    }
