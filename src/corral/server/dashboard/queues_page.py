"""The queues and providers page: each queue's depth, running tasks and limits (editable);
each provider account's cap, pause and park (pause and resume).

GET  /queues
POST /queues/{queue}/limits        `corral queue limits`: max_ready, max_running, rate
                                   (an empty field removes that limit)
POST /providers/{name}/pause | resume | cap   `corral provider set`
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from corral.foundation.errors import InvalidInput
from corral.server.context import store_of
from corral.server.dashboard.forms import Form, one
from corral.server.dashboard.guards import routes
from corral.server.dashboard.pages import redirect, render
from corral.server.dashboard.visitors import Visitor
from corral.server.paths import path_id
from corral.usecases import queues, usage

LIMITS = ("max_ready", "max_running", "rate")


def queues_page(request: Request, visitor: Visitor) -> Response:
    """Every queue with tasks or limits, and every provider account."""
    store = store_of(request)
    return render(
        request,
        visitor,
        "queues.html",
        live="/live?limit=0",
        queues=queues.queue_stats(store),
        providers=usage.provider_states(store),
    )


def set_limits(request: Request, visitor: Visitor, form: Form) -> Response:
    """Set the queue's three limits as the form gives them."""
    queue = path_id(request, "queue", "queue")
    changes = {name: _number(name, one(form, name)) for name in LIMITS}
    queues.set_queue_limits(store_of(request), queue, changes)
    return redirect(request, "/queues", f"Limits of {queue} saved.")


def _number(name: str, raw: str) -> float | None:
    if not raw.strip():
        return None
    try:
        return float(raw)
    except ValueError:
        raise InvalidInput(name, "a number, or nothing for no limit", raw[:20]) from None


def pause(request: Request, visitor: Visitor, form: Form) -> Response:
    """Pause the provider account: its agents claim nothing until resumed."""
    state = usage.set_provider(store_of(request), path_id(request, "name", "provider"), paused=True)
    return redirect(request, "/queues", f"Paused {state.name}.")


def resume(request: Request, visitor: Visitor, form: Form) -> Response:
    """Resume the provider account (a usage-limit park ends too)."""
    state = usage.set_provider(
        store_of(request), path_id(request, "name", "provider"), paused=False
    )
    return redirect(request, "/queues", f"Resumed {state.name}.")


def cap(request: Request, visitor: Visitor, form: Form) -> Response:
    """Set the provider account's cap of running agents (empty: none)."""
    raw = one(form, "max_running").strip()
    if raw and not raw.isdigit():
        raise InvalidInput("max_running", "a whole number, or nothing for no cap", raw[:20])
    name = path_id(request, "name", "provider")
    state = usage.set_provider(store_of(request), name, max_running=int(raw) if raw else None)
    return redirect(request, "/queues", f"Cap of {state.name} saved.")


ROUTES = routes(
    "/queues",
    queues_page,
    {
        "/queues/{queue}/limits": set_limits,
        "/providers/{name}/pause": pause,
        "/providers/{name}/resume": resume,
        "/providers/{name}/cap": cap,
    },
)
