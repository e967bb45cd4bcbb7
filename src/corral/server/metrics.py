"""`GET /metrics`: the store's state in the Prometheus text format (prometheus-client).

Read from the store at each scrape, not counted in this process: every `serve` process
sharing a store answers the same figures, and a restart loses nothing. Names follow the
conventions of the exporters people already scrape (celery-exporter, Sidekiq's):

    corral_tasks{queue,kind,status}      tasks in each state
    corral_workers{status}               workers in each state (offline and dead included)
    corral_worker_active_claims          claims held now by live workers
    corral_provider_parked{provider}     1 while a provider account is parked at its limit
    corral_provider_running{provider}    agents of the account running now

Counters and histograms (completed, failed, queue wait, run duration) are not served yet.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator

from prometheus_client import generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import CollectorRegistry
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.model.states import WorkerStatus
from corral.model.tokens import Role
from corral.server.auth import require
from corral.server.context import store_of
from corral.store import Store

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class StoreCollector:
    """A prometheus-client collector that reads the store at each collection."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def collect(self) -> Iterator[Metric]:
        """The gauges, as the store has them now."""
        store = self._store
        tasks = GaugeMetricFamily(
            "corral_tasks", "Tasks in each state", labels=["queue", "kind", "status"]
        )
        for queue, kind, status, n in store.task_gauges():
            tasks.add_metric([queue, kind, status], n)
        yield tasks
        workers = store.list_workers()
        by_status = Counter(str(w.status) for w in workers)
        gauge = GaugeMetricFamily("corral_workers", "Workers in each state", labels=["status"])
        for status in WorkerStatus:
            gauge.add_metric([str(status)], by_status.get(str(status), 0))
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
        for state in store.provider_states():
            parked.add_metric([state.name], 1 if state.parked else 0)
            running.add_metric([state.name], state.running)
        yield parked
        yield running


def metrics(request: Request) -> Response:
    """The figures for a viewer token (Prometheus sends it as a bearer token)."""
    store = store_of(request)
    require(request, store, Role.VIEWER)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(store))
    return Response(generate_latest(registry), media_type=CONTENT_TYPE)


ROUTES = [Route("/metrics", metrics, methods=["GET"])]
