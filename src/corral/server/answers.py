"""HTTP answers: JSON bodies, and corral's errors as the statuses the API documents.

Every error is one JSON object `{"error": "<one line>"}` (with `"field"` when the input
names one): bad input 422, not found 404, a refused state change 409, a missing or bad
token 401, a token without the role 403, a body too large 413, the store unreachable 503.
The line is the same text the CLI prints, so a remote client can show it as it is; `type`
names corral's error class.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.responses import Response

from corral.foundation.errors import CorralError, InvalidInput, NotFound
from corral.store.remote.wire import error_details


def answer(data: Any, status: int = 200) -> Response:
    """`data` as compact JSON."""
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False)
    return Response(body + "\n", status_code=status, media_type="application/json")


def error(status: int, message: str, field: str | None = None, **more: Any) -> Response:
    """An error answer."""
    data: dict[str, Any] = {"error": message}
    if field is not None:
        data["field"] = field
    return answer({**data, **more}, status)


def of_error(exc: CorralError) -> Response:
    """The answer to a use case's error: its class's status (corral.foundation.errors), its class's
    name as `type` and its details (`current` state, ...), so a remote store raises the
    same error (store/remote/client.py)."""
    field = exc.field if isinstance(exc, InvalidInput) and not isinstance(exc, NotFound) else None
    details = {k: v for k, v in error_details(exc).items() if k != "field"}
    return error(exc.http_status, exc.message, field, type=type(exc).__name__, details=details)
