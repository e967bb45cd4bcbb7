"""`GET /metrics`: the store's state in the Prometheus text format (prometheus-client).

Read from the store at each scrape, not counted in this process: every `serve` process
sharing a store answers the same figures, and a restart loses nothing. Names follow the
conventions of the exporters people already scrape (celery-exporter, Sidekiq's, Hatchet's).
The gauges of tasks and workers are the scraping token's namespace's, labelled with it; the
sums over the event log count every namespace's events.

    corral_tasks{namespace,queue,kind,status}    tasks in each state
    corral_workers{namespace,status}             workers in each state (offline, dead too)
    corral_worker_active_claims                  claims held now by live workers
    corral_provider_parked{provider}             1 while an account is parked at its limit
    corral_provider_running{provider}            agents of the account running now
    corral_pool_slots{namespace,group,state}     the running orchestrator's slots, by group
    corral_pool_slot_restarts{namespace,group}   restarts of the group's slots since its start
    corral_tasks_completed_total{queue,kind}     task.completed events
    corral_tasks_failed_total{queue,kind}        task.failed events (no attempt left)
    corral_task_queue_wait_seconds{queue,kind}   histogram: claimable to claimed
    corral_run_duration_seconds{queue,kind}      histogram: a run's start to its end
    corral_reconcile_repairs_total{kind}         the reconciler's repairs, by their event

The gauges are read whole at each scrape. The counters and histograms are sums over the
event log (model/tallies.py), which only grows: `LogTallies` keeps the sum of what it has
read and the cursor past it, and each scrape reads only what settled since, so a scrape of
a long log costs its new events, not the log (bench/metrics_scrape.py). The sum is a
function of the log, not of what this process saw, so it is the same in every process and
after a restart; a restart reads the log once from the start.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

from prometheus_client import generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.registry import CollectorRegistry
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.model.event_cursors import EventCursor
from corral.model.orchestrators import LIVE
from corral.model.states import WorkerStatus
from corral.model.tallies import Histogram, QueueKind, Tallies
from corral.server.auth import require
from corral.server.context import store_of
from corral.store import Store

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class LogTallies:
    """The tallies of the event log as far as read, and the cursor past them; a scrape
    reads on from there (one at a time: the lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tallies = Tallies()
        self._cursor: EventCursor | None = None

    def read(self, store: Store) -> Tallies:
        """The tallies of the whole log settled now (the object this keeps: read it
        before the next call)."""
        with self._lock:
            rows, self._cursor = store.tallies.event_tallies(self._cursor)
            self._tallies.add(rows)
            return self._tallies


class StoreCollector:
    """A prometheus-client collector that reads the store at each collection."""

    def __init__(self, store: Store, tallies: LogTallies) -> None:
        self._store = store
        self._tallies = tallies

    def collect(self) -> Iterator[Metric]:
        """The gauges, as the store has them now, then the tallies of the log."""
        yield from self._gauges()
        yield from _tally_metrics(self._tallies.read(self._store))

    def _gauges(self) -> Iterator[Metric]:
        store = self._store
        namespace = store.namespace
        tasks = GaugeMetricFamily(
            "corral_tasks", "Tasks in each state", labels=["namespace", "queue", "kind", "status"]
        )
        for queue, kind, status, n in store.tasks.task_gauges():
            tasks.add_metric([namespace, queue, kind, status], n)
        yield tasks
        workers = store.workers.list_workers()
        by_status = Counter(str(w.status) for w in workers)
        gauge = GaugeMetricFamily(
            "corral_workers", "Workers in each state", labels=["namespace", "status"]
        )
        for status in WorkerStatus:
            gauge.add_metric([namespace, str(status)], by_status.get(str(status), 0))
        yield gauge
        live = (w for w in workers if w.status not in (WorkerStatus.DEAD, WorkerStatus.OFFLINE))
        yield GaugeMetricFamily(
            "corral_worker_active_claims",
            "Claims held now by live workers",
            value=sum(w.active for w in live),
        )
        parked = GaugeMetricFamily(
            "corral_provider_parked", "1 while the account is parked", labels=["provider"]
        )
        running = GaugeMetricFamily(
            "corral_provider_running", "Agents of the account running", labels=["provider"]
        )
        for state in store.providers.provider_states():
            parked.add_metric([state.name], 1 if state.parked else 0)
            running.add_metric([state.name], state.running)
        yield parked
        yield running
        yield from _pool_metrics(store)


def _pool_metrics(store: Store) -> Iterator[Metric]:
    """The running orchestrator's slots by group and state, as its last beat reported them
    (a pool without [[pool.group]] is one group, `slot`); none while none runs."""
    namespace = store.namespace
    state = store.orchestrators.get_orchestrator()
    slots = state.slots if state.status in LIVE else []
    counts = Counter((str(s.get("group", "slot")), str(s.get("state"))) for s in slots)
    restarts: Counter[str] = Counter()
    for slot in slots:
        restarts[str(slot.get("group", "slot"))] += int(slot.get("restarts") or 0)
    gauge = GaugeMetricFamily(
        "corral_pool_slots",
        "The pool's slots in each state",
        labels=["namespace", "group", "state"],
    )
    for (group, slot_state), n in sorted(counts.items()):
        gauge.add_metric([namespace, group, slot_state], n)
    yield gauge
    restarted = GaugeMetricFamily(
        "corral_pool_slot_restarts",
        "Restarts of the group's slots since the orchestrator started",
        labels=["namespace", "group"],
    )
    for group, n in sorted(restarts.items()):
        restarted.add_metric([namespace, group], n)
    yield restarted


def _tally_metrics(tallies: Tallies) -> Iterator[Metric]:
    yield _counter("corral_tasks_completed", "Tasks completed", tallies.completed)
    yield _counter("corral_tasks_failed", "Tasks failed with no attempt left", tallies.failed)
    yield _histogram(
        "corral_task_queue_wait_seconds",
        "Seconds from a task becoming claimable to its claim",
        tallies.waits,
    )
    yield _histogram(
        "corral_run_duration_seconds", "Seconds from a run's start to its end", tallies.runs
    )
    repairs = CounterMetricFamily(
        "corral_reconcile_repairs", "Repairs by the reconciler, by event", labels=["kind"]
    )
    for kind, n in tallies.repairs.items():
        repairs.add_metric([kind], n)
    yield repairs


def _counter(name: str, doc: str, counts: dict[QueueKind, int]) -> Metric:
    family = CounterMetricFamily(name, doc, labels=["queue", "kind"])
    for (queue, kind), n in sorted(counts.items()):
        family.add_metric([queue, kind], n)
    return family


def _histogram(name: str, doc: str, found: dict[QueueKind, Histogram]) -> Metric:
    family = HistogramMetricFamily(name, doc, labels=["queue", "kind"])
    for (queue, kind), histogram in sorted(found.items()):
        buckets = [(_bound(b), n) for b, n in histogram.cumulative()]
        family.add_metric([queue, kind], buckets, histogram.sum_s)
    return family


def _bound(seconds: float) -> str:
    """A bucket's `le` as Prometheus writes it: `0.1`, `30.0`, `+Inf`."""
    return "+Inf" if seconds == float("inf") else repr(float(seconds))


def metrics(request: Request) -> Response:
    """The figures for a viewer token (Prometheus sends it as a bearer token)."""
    store = store_of(request)
    require(request, store)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(store, request.app.state.tallies))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE)


ROUTES = [Route("/metrics", metrics, methods=["GET"])]
