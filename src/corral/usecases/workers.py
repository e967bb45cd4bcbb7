"""Use cases of the worker registry: register, heartbeat, drain, deregister, a page of the
workers a filter selects, the live ones, and the ones a name stands for.

The store answers with the worker; these functions add what policy says: the heartbeat
interval the worker should keep, and whether it should drain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.foundation.records import record, replace
from corral.foundation.settings import Settings
from corral.model.actors import OPERATOR
from corral.model.paging import Page, page_of
from corral.model.states import WATCHED, WorkerStatus
from corral.model.workers import BeatFigures, WorkerFilter
from corral.store import Store

if TYPE_CHECKING:
    from corral.model.workers import NewWorker, Worker

DEFAULTS = Settings()
NO_FIGURES = BeatFigures()
WORKER_LISTING = "workers"  # the cursors of `worker list` and GET /api/workers


@record(frozen=True, slots=True, kw_only=True)
class Beat:
    """What a worker learns from registering or heartbeating."""

    worker: Worker
    heartbeat_interval_s: float
    drain: bool

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "id": self.worker.id,
            "status": str(self.worker.status),
            "heartbeat_interval_s": self.heartbeat_interval_s,
            "drain": self.drain,
        }


def _beat(worker: Worker, settings: Settings) -> Beat:
    return Beat(
        worker=worker,
        heartbeat_interval_s=settings.heartbeat_interval_s,
        drain=worker.status is WorkerStatus.DRAINING,
    )


def register(store: Store, spec: NewWorker, *, settings: Settings = DEFAULTS) -> Beat:
    """Add a worker to the registry; it is `starting` until its first heartbeat."""
    return _beat(store.workers.register_worker(spec, actor=spec.name), settings)


def heartbeat(
    store: Store,
    worker_id: str,
    *,
    figures: BeatFigures = NO_FIGURES,
    settings: Settings = DEFAULTS,
) -> Beat:
    """Prove the worker lives, with what it measured: extends its leases; answers the
    interval and whether to drain."""
    return _beat(store.workers.heartbeat(worker_id, figures=figures, actor=worker_id), settings)


def drain(store: Store, worker_id: str, *, actor: str = OPERATOR) -> Worker:
    """Ask a worker to take no new claims and finish what it holds; `actor` asked (an
    operator, or the worker itself on its way out)."""
    return store.workers.drain_worker(worker_id, actor=actor)


def deregister(store: Store, worker_id: str, *, reason: str = "deregistered") -> Worker:
    """Take a worker offline; its unfinished tasks go back to the queue, attempts uncounted."""
    return store.workers.deregister_worker(worker_id, reason=reason, actor=worker_id)


def page(store: Store, flt: WorkerFilter, *, count: bool = False) -> Page[Worker]:
    """A page of the workers `flt` selects (at most `flt.limit`, all without one), the
    cursor of the next (seed 002's ListWorkers), and with `count` how many it selects."""
    read = flt if flt.limit is None else replace(flt, limit=flt.limit + 1)
    found = store.workers.find_workers(read)
    total = store.workers.count_workers(flt) if count else None
    if flt.limit is None:
        return Page(items=found, next=None, total=total)
    items, after = page_of(found, flt.limit, WORKER_LISTING, lambda w: (w.seq,))
    return Page(items=items, next=after, total=total)


def live(store: Store) -> list[Worker]:
    """Every worker not offline (dead ones too, until they are deregistered), oldest first."""
    return [w for w in store.workers.list_workers() if w.status is not WorkerStatus.OFFLINE]


def answering_to(store: Store, name: str) -> list[Worker]:
    """The workers neither dead nor offline whose id or name is `name`, oldest first: who a
    slot's name (seed 001's `owner`, a worker token's name) stands for now. A runner
    restarted under its name registers a new worker, so a name outlives its workers."""
    return [w for w in store.workers.list_workers(tuple(WATCHED)) if name in (w.id, w.name)]
