"""The workers page: every worker with its host, process, task and for how long, heartbeat,
claims, totals, restarts, and the CPU and memory of its runner and of its agents' process
trees (what the heartbeat carries: runtime/worker/tree_metrics.py); drain and stop. Below,
the pool's slots as the orchestrator last reported them, a row each.

GET  /workers
POST /workers/{id}/drain   `corral worker drain`: finish what it holds, claim nothing more
POST /workers/{id}/stop    `corral worker deregister`: offline at once; its runner is told
                           at its next heartbeat (409) and stops
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from corral.model.states import TaskStatus
from corral.model.tasks import TaskFilter
from corral.model.workers import restart_counts
from corral.server.context import store_of
from corral.server.dashboard.forms import Form
from corral.server.dashboard.guards import routes
from corral.server.dashboard.pages import redirect, render
from corral.server.dashboard.visitors import Visitor
from corral.server.paths import path_id
from corral.usecases import workers

MAX_RUNNING = 10_000  # the running tasks read to show what each worker holds


def workers_page(request: Request, visitor: Visitor) -> Response:
    """Every worker, oldest first, each with the tasks it runs."""
    store = store_of(request)
    running = store.tasks.list_tasks(TaskFilter(statuses=(TaskStatus.RUNNING,), limit=MAX_RUNNING))
    held: dict[str, list[object]] = {}
    for task in running:
        if task.worker_id is not None:
            held.setdefault(task.worker_id, []).append(task)
    found = store.workers.list_workers()
    return render(
        request,
        visitor,
        "workers.html",
        live="/live?limit=0",
        workers=found,
        restarts=restart_counts(found),
        held=held,
        now=store.now(),
        slots=store.orchestrators.get_orchestrator().slots,
        names={w.id: w.name for w in found},
    )


def drain(request: Request, visitor: Visitor, form: Form) -> Response:
    """Drain the worker: it finishes its tasks and claims no more."""
    worker = workers.drain(store_of(request), path_id(request, "worker_id", "worker"))
    return redirect(request, "/workers", f"Draining {worker.name}: it claims nothing more.")


def stop(request: Request, visitor: Visitor, form: Form) -> Response:
    """Take the worker offline now."""
    worker_id = path_id(request, "worker_id", "worker")
    worker = workers.deregister(store_of(request), worker_id, reason="stopped from the dashboard")
    return redirect(request, "/workers", f"Stopped {worker.name}.")


ROUTES = routes(
    "/workers",
    workers_page,
    {"/workers/{worker_id}/drain": drain, "/workers/{worker_id}/stop": stop},
)
