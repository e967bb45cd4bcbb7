"""The dashboard's forms: URL-encoded bodies, bounded, read without a multipart parser.

Every write form is `application/x-www-form-urlencoded` (no file uploads), so the
standard library parses it; a body over MAX_FORM_BYTES is refused before it is read, and
a value holding NUL is refused (422) before any use case sees it.
"""

from __future__ import annotations

from urllib.parse import parse_qs

from starlette.requests import Request

from corral.foundation import documents
from corral.server.auth import Denied

MAX_FORM_BYTES = 256 * 1024  # a bulk form of 500 selected ids is about 10 KiB

Form = dict[str, list[str]]


async def read_form(request: Request) -> Form:
    """The fields of the request's form, each a list of its values in order."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_FORM_BYTES:
        raise Denied(413, f"a form of at most {MAX_FORM_BYTES} bytes")
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM_BYTES:
            raise Denied(413, f"a form of at most {MAX_FORM_BYTES} bytes")
    form = parse_qs(body.decode("utf-8", errors="replace"), keep_blank_values=True)
    for name, values in form.items():
        for value in values:
            documents.check_text(name[:40], value)  # no NUL: a store could not hold it
    return form


def one(form: Form, name: str, default: str = "") -> str:
    """The first value of field `name`, or `default`."""
    values = form.get(name)
    return values[0] if values else default
