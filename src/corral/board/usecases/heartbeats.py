"""Use cases of seed 001's heartbeats: every slot's, from the worker registry and the active
claims, read at each call (board/model/heartbeats.py maps corral's worker states onto the seed's);
and a slot's own heartbeat, which registers its worker on the slot's first call.

Read from the store, not kept by the server: every `serve` process of a store answers the
same, and the liveness the reconciler judges is the one shown.

A slot is a worker name (a worker token's name). Its loop needs nothing but a base URL
and that token: its first heartbeat or claim finds no live worker of its name and
registers one (`Workers.slot_worker`: one transaction in which a slot's calls take
turns, so two first calls at once add one worker), and every heartbeat after keeps it
alive and its claims' leases extended, as a runner's heartbeat does.
"""

from __future__ import annotations

from typing import Any

from corral.board.model.heartbeats import heartbeats
from corral.board.model.sessions import KIND, session_id
from corral.foundation.errors import WorkerUnavailable
from corral.model.states import WATCHED, WorkerStatus
from corral.model.tasks import TaskFilter
from corral.model.workers import NewWorker, Worker
from corral.store import Store
from corral.usecases import workers

# Active claims read: far more than any pool holds at once.
MAX_CLAIMS = 10_000
# Sessions read for the claims that started no run: the newest, far more than a fleet's
# slots hold claims at once.
MAX_SESSIONS = 1000
OFFLINE = "graceful-shutdown"  # the reason a slot's `offline` heartbeat records by default


def slots(store: Store) -> dict[str, dict[str, Any]]:
    """Each slot's heartbeat, by slot."""
    running = store.claims.running_tasks(MAX_CLAIMS)
    spawned = _sessions_by_claim(store) if any(c.run_id is None for c in running) else {}
    return heartbeats(store.workers.list_workers(), running, spawned)


def beat(store: Store, spec: NewWorker) -> Worker:
    """Slot `spec.name` lives: its live worker (registered from `spec` if it has none)
    heartbeats, extending its claims' leases; the worker then."""
    worker, _added = store.workers.slot_worker(spec, actor=spec.name)
    return workers.heartbeat(store, worker.id).worker


def claiming(store: Store, spec: NewWorker) -> Worker:
    """Slot `spec.name` is about to claim: its live worker (registered from `spec` if it
    has none), heartbeated only when it is `stale`, the one live status that may not
    claim: a claim that is then refused has changed nothing of a worker it found."""
    worker, _added = store.workers.slot_worker(spec, actor=spec.name)
    if worker.status is WorkerStatus.STALE:
        return workers.heartbeat(store, worker.id).worker
    return worker


def offline(store: Store, slot: str, *, reason: str = OFFLINE) -> list[Worker]:
    """Slot `slot` shut down: each of its live workers goes offline (its unfinished claims
    back to the queue, attempts uncounted); none is no error (it was never registered)."""
    gone = []
    for worker in store.workers.list_workers(tuple(WATCHED)):
        if worker.name == slot:
            try:
                gone.append(workers.deregister(store, worker.id, reason=reason))
            except WorkerUnavailable:  # went offline meanwhile: so much the better
                continue
    return gone


def _sessions_by_claim(store: Store) -> dict[int, str]:
    """The id of the newest session spawned under each claim (a seed loop's claim starts no
    run: its session is a task of its own, spawned by the slot's token while it held the
    claim, which the session's payload names: board/usecases/sessions.py). The newest
    sessions only: a claim's session is spawned after its claim, so it is among them."""
    flt = TaskFilter(kinds=(KIND,), limit=MAX_SESSIONS, newest_first=True)
    found: dict[int, str] = {}
    for task in store.tasks.list_tasks(flt):
        claim = task.payload.get("claim")
        if isinstance(claim, int) and claim not in found:
            found[claim] = session_id(task)
    return found
