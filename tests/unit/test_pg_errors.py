"""PostgreSQL failures become one line with a hint, and never show a password."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral.store.postgres.errors import describe
from corral.store.urls import safe_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:hunter2@db1:5432/corral", "postgresql://u:***@db1:5432/corral"),
        ("postgresql://u@db1/corral", "postgresql://u@db1/corral"),
        ("postgres://u:p%40ss@db1/c?sslmode=require", "postgres://u:***@db1/c?sslmode=require"),
        ("postgresql://u:hunter2@[::1/x", "postgresql://u:***@[::1/x"),
    ],
)
def test_safe_url_hides_only_the_password(url, shown):
    """The password becomes ***, even in a URL too broken to parse; the rest stays."""
    assert shown == safe_url(url)


class _Failure(Exception):
    """Stands in for a psycopg error: its text, and its SQLSTATE when it has one."""

    def __init__(self, text: str, sqlstate: str | None = None) -> None:
        super().__init__(text)
        self.sqlstate = sqlstate


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (
            _Failure(
                'connection failed: connection to server at "127.0.0.1", port 1 failed: '
                "Connection refused\n\tIs the server running on that host and accepting "
                "TCP/IP connections?"
            ),
            "database db: Connection refused (is the server running, and on that port?)",
        ),
        (
            _Failure('connection failed: FATAL:  role "bob" does not exist'),
            'database db: role "bob" does not exist (check the user name in the URL)',
        ),
        (
            _Failure("permission denied for schema public", sqlstate="42501"),
            "database db: permission denied for schema public (this user may not change corral's "
            "schema: grant it CREATE, or migrate as the owner)",
        ),
        (
            _Failure('duplicate key value violates unique constraint "x"\nDETAIL: ...'),
            'database db: duplicate key value violates unique constraint "x"',
        ),
    ],
)
def test_describe_gives_one_line_with_a_hint(failure, expected):
    """libpq's several lines become the first one, without its prefixes, plus a hint."""
    assert expected == describe("db", failure)
