"""The tasks page: filter, search, sort and page through tasks; act on many at once.

GET  /tasks?status=&queue=&kind=&assignee=&label=&q=&sort=&after=&limit=
POST /tasks/bulk   action=retry|cancel|priority (with `priority`), and either the ids of
                   the selected rows (`id`, repeated) or scope=matching: every task the
                   filters match, at most BULK_LIMIT, after a confirmation page that
                   shows how many

A bulk action calls the use case of one task (`corral retry`, `corral cancel`,
`tasks.reprioritise`) for each task, each its own transaction: a task the state machine
refuses (a retry of a running task) is counted as skipped and the others go on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import Response

from corral import tasks
from corral.errors import CorralError, InvalidInput
from corral.model.states import TaskStatus
from corral.model.task_pages import PageKey, TaskQuery, TaskSort
from corral.server.context import store_of
from corral.server.dashboard.forms import Form, one
from corral.server.dashboard.guards import routes
from corral.server.dashboard.pages import redirect, render
from corral.server.dashboard.task_filters import PAGE_SIZES, filter_pairs, link, task_query
from corral.server.dashboard.visitors import Visitor
from corral.store import Store

LIVE = "/live?limit=0"  # every event: any may change a row
BULK_LIMIT = 10_000  # the most tasks one bulk action touches (Oban Web's is 1,000)
VERBS = {"retry": "Retried", "cancel": "Cancelled", "priority": "Re-prioritised"}


def task_list(request: Request, visitor: Visitor) -> Response:
    """A page of the tasks the query string's filters match."""
    query = task_query({k: request.query_params.getlist(k) for k in request.query_params})
    found = store_of(request).task_page(query)
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
        live=LIVE,
    )


def bulk(request: Request, visitor: Visitor, form: Form) -> Response:
    """Retry, cancel or re-prioritise the selected tasks, or (confirmed) every task the
    filters match."""
    action = one(form, "action")
    store, query = store_of(request), task_query(form)
    do = _action(store, action, one(form, "priority"))
    back = link(query)
    if one(form, "scope") != "matching":
        ids = form.get("id", [])
        if not ids:
            return redirect(request, back, "Select tasks first, or act on all that match.")
        return _apply(request, action, do, ids, back)
    count = store.count_task_page(query, cap=BULK_LIMIT + 1)
    if one(form, "confirm") != str(count):
        return render(
            request,
            visitor,
            "confirm.html",
            action=action,
            count=count,
            limit=BULK_LIMIT,
            hidden=filter_pairs(query),
            back=back,
            priority=one(form, "priority"),
        )
    return _apply(request, action, do, _matching(store, query), back)


def _action(store: Store, action: str, priority: str) -> Callable[[str], object]:
    """What the bulk action does to one task (by id)."""
    if action == "retry":
        return lambda task_id: tasks.retry(store, task_id)
    if action == "cancel":
        return lambda task_id: tasks.cancel(store, task_id)
    if action != "priority":
        raise InvalidInput("action", "retry, cancel or priority", action[:20])
    digits = priority.strip().removeprefix("-")
    if not digits.isdigit() or len(digits) > 10:
        raise InvalidInput("priority", "a whole number", priority[:20])
    return lambda task_id: tasks.reprioritise(store, task_id, int(priority))


def _matching(store: Store, query: TaskQuery) -> list[str]:
    """The ids of the tasks `query` matches, oldest first, at most BULK_LIMIT."""
    ids: list[str] = []
    after: PageKey | None = None
    while len(ids) < BULK_LIMIT:
        found = store.task_page(replace(query, sort=TaskSort.OLDEST, after=after, limit=500))
        ids.extend(t.id for t in found.tasks)
        if found.next is None:
            break
        after = found.next
    return ids[:BULK_LIMIT]


def _apply(
    request: Request, action: str, do: Callable[[str], object], ids: list[str], back: str
) -> Response:
    done, skipped = 0, 0
    for task_id in dict.fromkeys(ids):
        try:
            do(task_id)
            done += 1
        except CorralError:
            skipped += 1
    request.app.state.work_signal.notify()  # retried tasks are ready: wake waiting claims
    note = f"{VERBS[action]} {done} task{'s' if done != 1 else ''}"
    if skipped:
        note += f"; {skipped} skipped (their state does not allow it)"
    return redirect(request, back, note + ".")


ROUTES = routes("/tasks", task_list, {"/tasks/bulk": bulk})
