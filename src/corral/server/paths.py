"""Ids in a route's path, as a route reads them.

An id is corral's (`w-7k2m9x4qab`): short, and plain text. A path segment that cannot be
one (over MAX_ID_CHARS, or holding NUL or a lone surrogate, which PostgreSQL cannot even
compare) names nothing: 404 as for an unknown id, without asking the store.
"""

from __future__ import annotations

from starlette.requests import Request

from corral.foundation import documents
from corral.foundation.errors import NotFound

MAX_ID_CHARS = 100


def path_id(request: Request, name: str, what: str) -> str:
    """Path parameter `name`, the id of a `what`; NotFound if it cannot be one."""
    raw: str = request.path_params[name]
    if len(raw) > MAX_ID_CHARS or documents.problem_of(raw) is not None:
        raise NotFound(what, raw[:MAX_ID_CHARS])
    return raw
