"""The overview (`/`): the fleet at a glance, live.

Tasks by status and by queue, the tasks waiting for a person (and why), runs per minute
over the last hour (charts.py), workers by status, providers parked, reviews waiting, and
the reconciler's last pass and its repairs over the last hour. Each figure is read through
a use case or a store read; those that read many tasks (the counts, the tasks and reviews
waiting) through a `Snapshot` (snapshot.py), so
the page costs the same at a million tasks as at a thousand. A namespace has a snapshot
of its own, made at its first visit: a visitor sees their token's namespace alone.
"""

from __future__ import annotations

import threading
from collections import Counter, defaultdict
from datetime import timedelta
from typing import NamedTuple

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.foundation.settings import Settings
from corral.model.states import TaskStatus
from corral.model.tasks import Task, TaskFilter
from corral.server.context import store_of
from corral.server.dashboard import charts
from corral.server.dashboard.guards import page
from corral.server.dashboard.pages import render
from corral.server.dashboard.snapshot import Snapshot
from corral.server.dashboard.visitors import Visitor
from corral.store import Store
from corral.usecases import reviews, usage
from corral.usecases.reviews import PendingReview

RELOAD_AFTER_S = 1  # a page shown with figures behind the log loads itself again after this
WAITING_SHOWN = 20  # the oldest tasks waiting for a person, by name; the count says the rest

# The reconciler's repairs (docs/state-machines.md, Events), counted over the last hour.
REPAIRS = (
    "task.lease_expired",
    "task.crashed",
    "task.orphan_recovered",
    "claim.closed",
    "worker.stale",
    "worker.dead",
    "worker.status_fixed",
)


class TaskFigures(NamedTuple):
    """What the overview shows of the tasks: a pass over them, held in a Snapshot."""

    gauges: list[tuple[str, str, str, int]]  # (queue, kind, status, how many)
    waiting: list[PendingReview]
    asking: list[Task]  # the oldest WAITING_SHOWN tasks waiting for a person


class TaskFiguresByNamespace:
    """The server's snapshots of the overview's task figures, one per namespace visited
    (as many as the namespaces of its tokens)."""

    def __init__(self, store: Store, settings: Settings) -> None:
        self._store, self._settings = store, settings
        self._made: dict[str, Snapshot[TaskFigures]] = {}
        self._lock = threading.Lock()

    def of(self, namespace: str) -> Snapshot[TaskFigures]:
        """The snapshot of `namespace`, made at its first call."""
        with self._lock:
            found = self._made.get(namespace)
            if found is None:
                found = self._made[namespace] = task_figures(
                    self._store.in_namespace(namespace), self._settings
                )
            return found


def task_figures(store: Store, settings: Settings) -> Snapshot[TaskFigures]:
    """A snapshot of the overview's task figures in `store`'s namespace."""

    def read() -> TaskFigures:
        stale_after_s = settings.review_stale_after_s
        return TaskFigures(
            store.tasks.task_gauges(),
            reviews.pending(store, stale_after_s=stale_after_s),
            store.tasks.list_tasks(TaskFilter(statuses=(TaskStatus.WAITING,), limit=WAITING_SHOWN)),
        )

    return Snapshot(read, store.events.events_head)


def overview(request: Request, visitor: Visitor) -> Response:
    """The overview page."""
    store = store_of(request)
    snapshots: TaskFiguresByNamespace = request.app.state.task_figures
    opened = request.headers.get("hx-request") is None  # not a live region's fetch
    figures = snapshots.of(store.namespace).get(fresh=opened)
    by_queue: dict[str, Counter[str]] = defaultdict(Counter)
    for queue, _kind, status, n in figures.value.gauges:
        by_queue[queue][status] += n
    by_status: Counter[str] = Counter()
    for counts in by_queue.values():
        by_status.update(counts)
    minutes = charts.runs_per_minute(store)
    workers = Counter(str(w.status) for w in store.workers.list_workers())
    return render(
        request,
        visitor,
        "overview.html",
        live="/live?limit=0",
        statuses=list(TaskStatus),
        by_status=by_status,
        by_queue=sorted(by_queue.items()),
        chart=charts.svg(minutes),
        totals=minutes.totals,
        workers=sorted(workers.items()),
        parked=[p for p in usage.provider_states(store) if p.parked],
        waiting=figures.value.waiting,
        asking=figures.value.asking,
        reload_after_s=None if figures.current else RELOAD_AFTER_S,
        orchestrator=store.orchestrators.get_orchestrator(),
        repairs=_repairs(store),
        now=store.now(),
    )


def _repairs(store: Store) -> list[tuple[str, int]]:
    """How many of each repair the reconciler made in the last hour, the most first."""
    since_at = store.now() - timedelta(hours=1)
    found: Counter[str] = Counter()
    for name, _minute, n in store.task_pages.events_per_minute(REPAIRS, since_at):
        found[name] += n
    return found.most_common()


ROUTES = [Route("/", page(overview), methods=["GET"])]
