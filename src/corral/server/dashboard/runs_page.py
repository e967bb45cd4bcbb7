"""The runs page: every run, newest first, with its task, worker, agent, outcome, duration,
tokens and cost; filtered by task and worker, paged back by the order runs were opened.

GET /runs?task=ID&worker=ID&before=SEQ&limit=N

The filters are the store's (`list_runs`, `count_runs`: the runs of the visitor's
namespace alone); `before` is the page's keyset, the `seq` of the last run of the page
before, so the hundredth page costs what the first does.
"""

from __future__ import annotations

from urllib.parse import urlencode

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.foundation.errors import InvalidInput
from corral.model.runs import Run
from corral.server.context import store_of
from corral.server.dashboard.guards import page
from corral.server.dashboard.pages import render
from corral.server.dashboard.visitors import Visitor
from corral.server.paths import MAX_ID_CHARS

SHOWN = 100  # the runs a page shows, unless `limit` says otherwise
MAX_SHOWN = 500
FILTERS = ("task", "worker")


def runs_page(request: Request, visitor: Visitor) -> Response:
    """A page of the runs the filters match, newest first."""
    given = {k: _id(k, request.query_params.get(k, "")) for k in FILTERS}
    before = _whole("before", request.query_params.get("before", ""))
    limit = _whole("limit", request.query_params.get("limit", ""))
    limit = SHOWN if limit is None else limit
    if not 1 <= limit <= MAX_SHOWN:
        raise InvalidInput("limit", f"a whole number from 1 to {MAX_SHOWN}", str(limit))
    store = store_of(request)
    task_id, worker_id = given["task"], given["worker"]
    found = store.runs.list_runs(
        task_id=task_id, worker_id=worker_id, limit=limit + 1, before_seq=before
    )
    runs = found[:limit]
    filters = [(k, v) for k, v in given.items() if v is not None]
    return render(
        request,
        visitor,
        "runs.html",
        live=None if before else "/live?limit=0",
        runs=runs,
        count=store.runs.count_runs(task_id=task_id, worker_id=worker_id),
        titles=store.task_pages.task_titles(sorted({r.task_id for r in runs})) if runs else {},
        names={w.id: w.name for w in store.workers.list_workers()},
        chosen=given,
        cost_usd=_cost_usd(runs),
        newest_url=_link(filters) if before else None,
        older_url=_link(filters, before=runs[-1].seq) if len(found) > len(runs) else None,
    )


def _cost_usd(runs: list[Run]) -> float | None:
    """The sum of the runs' costs, or None when none reported one."""
    costs = [r.usage["cost_usd"] for r in runs if r.usage and r.usage.get("cost_usd") is not None]
    return sum(costs) if costs else None


def _id(field: str, raw: str) -> str | None:
    """A filter's id, or None when the field is empty."""
    raw = raw.strip()
    if not raw:
        return None
    if len(raw) > MAX_ID_CHARS or not raw.isprintable():
        raise InvalidInput(field, f"an id of at most {MAX_ID_CHARS} characters", raw[:20])
    return raw


def _whole(field: str, raw: str) -> int | None:
    """A whole number of the query string, or None when the field is empty."""
    raw = raw.strip()
    if not raw:
        return None
    if not (raw.isascii() and raw.isdigit() and len(raw) <= 18):
        raise InvalidInput(field, "a whole number", raw[:20])
    return int(raw)


def _link(filters: list[tuple[str, str]], **key: int) -> str:
    return "/runs?" + urlencode([*filters, *((k, str(v)) for k, v in key.items())])


ROUTES = [Route("/runs", page(runs_page), methods=["GET"])]
