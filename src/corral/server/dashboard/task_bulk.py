"""Bulk actions of the tasks page: retry, cancel or re-prioritise the selected rows, or
every task the filters match, in batches.

POST /tasks/bulk   action=retry|cancel|priority (with `priority`), and either the ids of
                   the selected rows (`id`, repeated) or scope=matching: every task the
                   filters match, after a confirmation page that shows how many

Each task is changed by the use case of one task (`corral retry`, `corral cancel`,
`tasks.reprioritise`), each its own transaction: a task the state machine refuses (a
retry of a running task) is counted as skipped and the others go on.

"Everything that matches" may be a hundred thousand tasks, far more than one request
should hold a browser and a server thread for. So each request acts on one batch of at
most BATCH tasks, read oldest first after the cursor the batch before ended at (a keyset
read: a cancelled task leaving a status filter moves nothing), and answers with the count
so far and a form for the next batch, which the page posts by itself (htmx; without
JavaScript, a button). Nothing is held between requests but that form, so any process of
`corral serve --workers N` may take the next batch, and stopping half way leaves every
task either changed or not. The run acts on at most the number confirmed: tasks that
start matching meanwhile (new ones, retried ones) are not swept in beyond it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import Response

from corral.foundation.errors import CorralError, InvalidInput
from corral.model.task_pages import TaskQuery, TaskSort, parse_page_key
from corral.server.context import store_of
from corral.server.dashboard.forms import Form, one
from corral.server.dashboard.pages import redirect, render
from corral.server.dashboard.task_filters import filter_pairs, link, task_query
from corral.server.dashboard.visitors import Visitor
from corral.store import Store
from corral.usecases import tasks

BULK_LIMIT = 100_000  # the most tasks one confirmed run touches
BATCH = 500  # tasks per request: a second or so of single-task transactions
VERBS = {"retry": "Retried", "cancel": "Cancelled", "priority": "Re-prioritised"}


def bulk(request: Request, visitor: Visitor, form: Form) -> Response:
    """Retry, cancel or re-prioritise the selected tasks, or (confirmed) the next batch of
    every task the filters match."""
    action = one(form, "action")
    store, query = store_of(request), task_query(form)
    do = _action(store, action, one(form, "priority"))
    back = link(query)
    if one(form, "scope") != "matching":
        ids = form.get("id", [])
        if not ids:
            return redirect(request, back, "Select tasks first, or act on all that match.")
        done, skipped = _apply(do, ids)
        request.app.state.work_signal.notify()  # retried tasks are ready: wake claims
        return redirect(request, back, _note(action, done, skipped))
    if one(form, "batch") in ("", "start"):  # a run's first request: count, ask, check
        count = store.task_pages.count_task_page(query, cap=BULK_LIMIT + 1)
        if one(form, "confirm") != str(count):
            return _confirmation(request, visitor, form, count, query)
    return _next_batch(request, visitor, form, query, do)


def _confirmation(
    request: Request, visitor: Visitor, form: Form, count: int, query: TaskQuery
) -> Response:
    return render(
        request,
        visitor,
        "confirm.html",
        action=one(form, "action"),
        count=count,
        limit=BULK_LIMIT,
        hidden=filter_pairs(query),
        back=link(query),
        priority=one(form, "priority"),
        batch_size=BATCH,
    )


def _next_batch(
    request: Request, visitor: Visitor, form: Form, query: TaskQuery, do: Callable[[str], object]
) -> Response:
    """Act on the next batch of the confirmed run; the progress page, or back to the list
    with the totals once the run is over."""
    action = one(form, "action")
    total = min(_whole("confirm", one(form, "confirm")), BULK_LIMIT)
    done = _whole("done", one(form, "done", "0"))
    skipped = _whole("skipped", one(form, "skipped", "0"))
    cursor = one(form, "batch")
    after = None if cursor in ("", "start") else parse_page_key(cursor, "batch")
    left = total - done - skipped
    found = None
    if left > 0:
        batch = replace(query, sort=TaskSort.OLDEST, after=after, limit=min(BATCH, left))
        found = store_of(request).task_pages.task_page(batch)
    if found is not None:
        more_done, more_skipped = _apply(do, [t.id for t in found.tasks])
        done, skipped = done + more_done, skipped + more_skipped
        request.app.state.work_signal.notify()  # retried tasks are ready: wake claims
    if found is None or found.next is None or done + skipped >= total:
        return _finished(request, link(query), _note(action, done, skipped))
    return render(
        request,
        visitor,
        "bulk_progress.html",
        action=action,
        verb=VERBS[action],
        total=total,
        done=done,
        skipped=skipped,
        hidden=filter_pairs(query),
        batch=str(found.next),
        priority=one(form, "priority"),
        back=link(query),
    )


def _finished(request: Request, back: str, note: str) -> Response:
    """Back to the list with the run's totals: a 303, or for the page's own post of a
    batch (htmx) an answer that tells htmx to go there, so the address bar follows."""
    response = redirect(request, back, note)
    if request.headers.get("hx-request") == "true":
        response.status_code = 200
        response.headers["HX-Redirect"] = response.headers["location"]
        del response.headers["location"]
    return response


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


def _apply(do: Callable[[str], object], ids: list[str]) -> tuple[int, int]:
    """(changed, skipped) of `do` on each task, each its own transaction."""
    done, skipped = 0, 0
    for task_id in dict.fromkeys(ids):
        try:
            do(task_id)
            done += 1
        except CorralError:
            skipped += 1
    return done, skipped


def _note(action: str, done: int, skipped: int) -> str:
    note = f"{VERBS[action]} {done} task{'s' if done != 1 else ''}"
    if skipped:
        note += f"; {skipped} skipped (their state does not allow it)"
    return note + "."


def _whole(field: str, raw: str) -> int:
    """A count the run's form carries: a whole number, at most BULK_LIMIT."""
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 7 and int(raw) <= BULK_LIMIT + 1):
        raise InvalidInput(field, f"a whole number up to {BULK_LIMIT}", raw[:20])
    return int(raw)
