"""The dashboard: `corral serve`'s pages for people, at `/`.

Server-rendered HTML (Jinja2, autoescaped) that reads without JavaScript; htmx and its
SSE extension (vendored under static/vendor, with their licences) refresh the live parts
of a page as the event stream says something changed. Each page is a module of its own
(overview, task_list, task_detail, runs_page, reviews_page, workers_page, queues_page,
schedules_page, events_page); each write
is a form that calls the use case the API and the CLI call, after the checks of
guards.py (session, CSRF, an operator's role). Jinja2 is imported only here.

    visitors.py  who is asking (session cookie, or the loopback while no token exists)
    csrf.py      the origin and token every write must carry
    pages.py     rendering, the Content-Security-Policy and the other headers
    task_bulk.py the task list's bulk actions, in batches
    event_names.py the titles and claim holders a page of events names
    snapshot.py  the overview's figures that cost a pass over the tasks, read off the request
"""

from __future__ import annotations

import os

from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles

from corral.server.dashboard import (
    events_page,
    live,
    login,
    overview,
    queues_page,
    reviews_page,
    runs_page,
    schedules_page,
    task_detail,
    task_list,
    workers_page,
)

STATIC = os.path.join(os.path.dirname(__file__), "static")

ROUTES: list[BaseRoute] = [
    *overview.ROUTES,
    *login.ROUTES,
    *live.ROUTES,
    *task_list.ROUTES,
    *task_detail.ROUTES,
    *runs_page.ROUTES,
    *reviews_page.ROUTES,
    *workers_page.ROUTES,
    *queues_page.ROUTES,
    *schedules_page.ROUTES,
    *events_page.ROUTES,
    Mount("/static", app=StaticFiles(directory=STATIC), name="static"),
]
