"""The tasks page: filter, search, sort and page through tasks (both ways); act on many
at once (task_bulk.py).

GET  /tasks?status=&queue=&kind=&assignee=&label=&q=&sort=&after=|before=&limit=
POST /tasks/bulk   task_bulk.py
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response

from corral.model.states import TaskStatus
from corral.model.task_pages import TaskSort
from corral.server.context import store_of
from corral.server.dashboard import task_bulk
from corral.server.dashboard.guards import routes
from corral.server.dashboard.pages import render
from corral.server.dashboard.task_filters import PAGE_SIZES, filter_pairs, link, task_query
from corral.server.dashboard.visitors import Visitor

LIVE = "/live?limit=0"  # every event: any may change a row


def task_list(request: Request, visitor: Visitor) -> Response:
    """A page of the tasks the query string's filters match."""
    query = task_query({k: request.query_params.getlist(k) for k in request.query_params})
    found = store_of(request).task_pages.task_page(query)
    return render(
        request,
        visitor,
        "tasks.html",
        query=query,
        tasks=found.tasks,
        statuses=list(TaskStatus),
        sorts=list(TaskSort),
        page_sizes=PAGE_SIZES,
        hidden=filter_pairs(query),
        first_url=link(query),
        next_url=None if found.next is None else link(query, after=str(found.next)),
        previous_url=None if found.previous is None else link(query, before=str(found.previous)),
        live=LIVE,
    )


ROUTES = routes("/tasks", task_list, {"/tasks/bulk": task_bulk.bulk})
