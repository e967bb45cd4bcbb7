"""The schedules page: each schedule's cron, its next fire times and its last fire, with
pause, resume and trigger now.

GET  /schedules
POST /schedules/{id}/pause     `corral schedule pause`
POST /schedules/{id}/resume    `corral schedule resume` (catching up what it missed)
POST /schedules/{id}/trigger   `corral schedule trigger`: one fire now, outside the cron
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from corral.server.context import settings_of, store_of
from corral.server.dashboard.forms import Form
from corral.server.dashboard.guards import routes
from corral.server.dashboard.pages import redirect, render
from corral.server.dashboard.visitors import Visitor
from corral.server.paths import path_id
from corral.usecases import schedules

NEXT_FIRES = 3


def schedules_page(request: Request, visitor: Visitor) -> Response:
    """Every schedule with its next fire times."""
    found = store_of(request).schedules.list_schedules()
    return render(
        request,
        visitor,
        "schedules.html",
        live="/live?limit=0",
        schedules=[(s, schedules.upcoming(s, NEXT_FIRES)) for s in found],
    )


def pause(request: Request, visitor: Visitor, form: Form) -> Response:
    """Stop the schedule firing until resumed."""
    schedule = schedules.pause(store_of(request), path_id(request, "schedule_id", "schedule"))
    return redirect(request, "/schedules", f"Paused {schedule.id}.")


def resume(request: Request, visitor: Visitor, form: Form) -> Response:
    """Fire again, catching up what was missed."""
    schedule = schedules.resume(store_of(request), path_id(request, "schedule_id", "schedule"))
    return redirect(request, "/schedules", f"Resumed {schedule.id}.")


def trigger(request: Request, visitor: Visitor, form: Form) -> Response:
    """One fire now."""
    schedule_id = path_id(request, "schedule_id", "schedule")
    fire = schedules.trigger(store_of(request), schedule_id, settings=settings_of(request))
    request.app.state.work_signal.notify()
    return redirect(request, "/schedules", f"Triggered {schedule_id}: task {fire.task_id}.")


# Each write at /schedules/{id}/ and its function's name.
ACTIONS = (pause, resume, trigger)
ROUTES = routes(
    "/schedules", schedules_page, {f"/schedules/{{schedule_id}}/{a.__name__}": a for a in ACTIONS}
)
