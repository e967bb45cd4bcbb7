"""The overview (`/`): the fleet at a glance, live.

Tasks by status and by queue, runs per minute over the last hour (charts.py), workers by
status, providers parked, reviews waiting, and the reconciler's last pass and its repairs
over the last hour. Each figure is read through a use case or a store read.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import timedelta

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral import reviews, usage
from corral.model.states import TaskStatus
from corral.server.context import settings_of, store_of
from corral.server.dashboard import charts
from corral.server.dashboard.guards import page
from corral.server.dashboard.pages import render
from corral.server.dashboard.visitors import Visitor
from corral.store import Store

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


def overview(request: Request, visitor: Visitor) -> Response:
    """The overview page."""
    store, settings = store_of(request), settings_of(request)
    by_queue: dict[str, Counter[str]] = defaultdict(Counter)
    for queue, _kind, status, n in store.task_gauges():
        by_queue[queue][status] += n
    by_status: Counter[str] = Counter()
    for counts in by_queue.values():
        by_status.update(counts)
    minutes = charts.runs_per_minute(store)
    workers = Counter(str(w.status) for w in store.list_workers())
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
        waiting=reviews.pending(store, stale_after_s=settings.review_stale_after_s),
        orchestrator=store.get_orchestrator(),
        repairs=_repairs(store),
        now=store.now(),
    )


def _repairs(store: Store) -> list[tuple[str, int]]:
    """How many of each repair the reconciler made in the last hour, the most first."""
    since_at = store.now() - timedelta(hours=1)
    found: Counter[str] = Counter()
    for name, _minute, n in store.events_per_minute(REPAIRS, since_at):
        found[name] += n
    return found.most_common()


ROUTES = [Route("/", page(overview), methods=["GET"])]
