"""Request bodies: read at most MAX_BODY_BYTES, parsed as corral parses any JSON document
(corral.foundation.documents: depth, numbers, NUL), and required to be one JSON object.

A body over the limit is refused with 413 before more of it is read; one that is not
JSON, or not an object, is 422 naming `body`. `fields` then checks an object's fields
against the names and JSON types a route takes, or a route reads the object as a record
of its fields (`record`): an unknown field or a wrong type is 422 naming that field.
"""

from __future__ import annotations

from typing import Any, TypeVar

from starlette.requests import Request

from corral.foundation import documents
from corral.foundation.errors import InvalidInput
from corral.server.auth import Denied
from corral.store.remote import wire

MAX_BODY_BYTES = 1 << 20
# How much of a bad value an error quotes: a line, however big the value.
QUOTED_CHARS = 40
_TYPE_NAMES = {str: "string", int: "whole number", float: "number", dict: "object", list: "array"}

R = TypeVar("R")


async def json_object(
    request: Request, limit: int = MAX_BODY_BYTES, *, empty: bool = False
) -> dict[str, Any]:
    """The request's body, of at most `limit` bytes, as a JSON object; with `empty`, no
    body at all stands for `{}` (a route whose fields are all optional)."""
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        raise Denied(413, f"a body of at most {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise Denied(413, f"a body of at most {limit} bytes")
        chunks.append(chunk)
    if empty and size == 0:
        return {}
    try:
        text = b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("body", "JSON in UTF-8") from None
    value = documents.parse("body", text, documents.MAX_DEPTH + documents.ENVELOPE_DEPTH)
    if not isinstance(value, dict):
        raise InvalidInput("body", "a JSON object", type(value).__name__)
    return value


def fields(body: dict[str, Any], types: dict[str, tuple[type, ...]]) -> dict[str, Any]:
    """The body's fields, each one of `types`' names and of its JSON types (true and false
    are not numbers here); InvalidInput naming the first that is not."""
    for name, value in body.items():
        wanted = types.get(name)
        if wanted is None:
            raise InvalidInput(quoted(name), "one of the fields " + ", ".join(types))
        if (isinstance(value, bool) and bool not in wanted) or not isinstance(value, wanted):
            raise InvalidInput(name, f"a JSON {_json_type(wanted)}", quoted(value))
    return dict(body)


def _json_type(types: tuple[type, ...]) -> str:
    return " or ".join(_TYPE_NAMES.get(t, "true or false") for t in types)


def quoted(value: Any) -> Any:
    """`value`, or its start when it would not fit in a line."""
    shown = value if isinstance(value, str) else repr(value)
    if len(shown) <= QUOTED_CHARS:
        return value
    return shown[:QUOTED_CHARS] + "..."


def record(body: dict[str, Any], tp: type[R]) -> R:
    """`body` as record `tp`, decoded by the types its fields declare (store/remote/wire.py):
    an unknown field, a missing one or a wrong type is InvalidInput naming it (`kinds[2]`),
    and the record's own checks bound its values."""
    decoded: R = wire.decode(body, tp, "")
    return decoded
