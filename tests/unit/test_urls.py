"""A store URL's password, in the user part or as a parameter, is masked where shown,
removed where handed to tasks, and scrubbed from messages that echo it."""

from __future__ import annotations

import pytest

from corral.store.urls import password_of, safe_url, scrub, without_password


@pytest.mark.parametrize(
    ("url", "shown", "bare", "password"),
    [
        ("postgresql://u:pw@h/db", "postgresql://u:***@h/db", "postgresql://u@h/db", "pw"),
        ("postgres://u:p%40w@h/db", "postgres://u:***@h/db", "postgres://u@h/db", "p@w"),
        ("postgresql://u:pa?ss@h/db", "postgresql://u:***@h/db", "postgresql://u@h/db", "pa?ss"),
        (
            "postgresql://u@h/db?password=pw&options=x",
            "postgresql://u@h/db?password=***&options=x",
            "postgresql://u@h/db?options=x",
            "pw",
        ),
        (
            "postgresql://u@h/db?options=x&PASSWORD=pw",
            "postgresql://u@h/db?options=x&PASSWORD=***",
            "postgresql://u@h/db?options=x",
            "pw",
        ),
        ("postgresql://u@h/db", "postgresql://u@h/db", "postgresql://u@h/db", None),
        ("data/a:b@c/corral.db", "data/a:b@c/corral.db", "data/a:b@c/corral.db", None),
    ],
)
def test_a_urls_password_is_masked_removed_and_found(
    url: str, shown: str, bare: str, password: str | None
) -> None:
    """safe_url masks, without_password removes, password_of finds (decoded)."""
    assert (shown, bare, password) == (safe_url(url), without_password(url), password_of(url))


def test_a_message_that_echoes_the_url_or_its_password_is_scrubbed() -> None:
    """The raw URL becomes the masked one; the password anywhere else becomes ***."""
    url = "postgresql://u:s3cr%21t@h/db"
    message = f'missing "=" after "{url}"; the password s3cr!t was wrong'
    assert 'missing "=" after "postgresql://u:***@h/db"; the password *** was wrong' == scrub(
        message, url
    )
