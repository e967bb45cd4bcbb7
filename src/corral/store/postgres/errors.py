"""PostgreSQL failures as the one line a user reads (the driver wraps them in StoreError).

libpq's messages run over several lines and name the server twice; a user needs what
went wrong and what to do, with the password never shown.
"""

from __future__ import annotations

import re
from typing import Any

from corral.store.urls import safe_url, scrub

INSUFFICIENT_PRIVILEGE = "42501"
_NOISE = re.compile(
    r"^(connection failed: |connection is bad: )?(connection to server at [^:]*: )?(FATAL: +)?"
)

# (what libpq says, what to add), first match wins.
_HINTS = (
    ("Connection refused", "is the server running, and on that port?"),
    ("timeout expired", "no answer: is the host reachable?"),
    ("could not translate host name", "unknown host"),
    ("failed to resolve host", "unknown host"),
    ("password authentication failed", "check the user and password"),
    ("no password supplied", "the server wants a password: put it in the URL or ~/.pgpass"),
    ('role "', "check the user name in the URL"),
    ('database "', "check the URL; create the database with `createdb` first"),
    ("invalid connection option", "not a valid PostgreSQL URL"),
    ('missing "="', "not a valid PostgreSQL URL"),
    ("URI", "not a valid PostgreSQL URL"),
    ("invalid integer value", "not a valid PostgreSQL URL"),
    ("invalid port", "not a valid PostgreSQL URL"),
)


def describe(url: str, exc: Any) -> str:
    """One line: the database, libpq's reason, and a hint when there is one; the URL's
    password masked in both (libpq may echo the raw URL)."""
    shown = safe_url(url)
    lines = [line.strip() for line in scrub(str(exc), url).splitlines() if line.strip()]
    reason = _NOISE.sub("", lines[0]) if lines else type(exc).__name__
    if getattr(exc, "sqlstate", None) == INSUFFICIENT_PRIVILEGE:
        hint = "this user may not change corral's schema: grant it CREATE, or migrate as the owner"
        return f"database {shown}: {reason} ({hint})"
    for needle, hint in _HINTS:
        if needle in reason:
            return f"database {shown}: {reason} ({hint})"
    return f"database {shown}: {reason}"
