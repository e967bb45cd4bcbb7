"""The reviews page: every task in review or approved and waiting to be merged, oldest
first, with how long it has waited (stale past `review_stale_after_s`) and the size of its
diff against its base (git's `--stat` summary: files changed, lines added and removed).

GET /reviews

The tasks are `corral review list`'s (usecases/reviews.pending); each diff size is
`corral review show`'s, read from the repository `corral serve` runs in, for the oldest
SIZED reviews only: git costs a process a review. A review whose branch git cannot read
shows git's one line instead.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import NamedTuple

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from corral.foundation.errors import CorralError
from corral.server.context import settings_of, store_of
from corral.server.dashboard.guards import page
from corral.server.dashboard.pages import render
from corral.server.dashboard.task_detail import branches_of
from corral.server.dashboard.visitors import Visitor
from corral.usecases import reviews
from corral.usecases.reviews import Branches, PendingReview

SIZED = 100  # the oldest reviews whose diff size is read


class Sized(NamedTuple):
    """A review waiting and the size of its diff ("" when git was not asked)."""

    pending: PendingReview
    size: str


def reviews_page(request: Request, visitor: Visitor) -> Response:
    """Every review waiting, oldest first, with its diff's size."""
    store = store_of(request)
    found = reviews.pending(store, stale_after_s=settings_of(request).review_stale_after_s)
    repo = cache(branches_of(request))  # opened once for the page, at its first review
    return render(
        request,
        visitor,
        "reviews.html",
        live="/live?limit=0",
        reviews=[
            Sized(p, _size(request, p.task.id, repo) if i < SIZED else "")
            for i, p in enumerate(found)
        ],
        sized=SIZED,
    )


def _size(request: Request, task_id: str, repo: Callable[[], Branches]) -> str:
    """The last line of the branch's `git diff --stat`, or git's refusal."""
    try:
        shown = reviews.show(store_of(request), task_id, repo)
    except CorralError as exc:
        return exc.message
    if shown.diff_stat is None:
        return "no branch"
    lines = shown.diff_stat.strip().splitlines()
    return lines[-1].strip() if lines else "no change"


ROUTES = [Route("/reviews", page(reviews_page), methods=["GET"])]
