"""How a store's URL is shown, stored and handed on: never with its password.

A PostgreSQL URL can carry a password in two places, `user:PASSWORD@host` and a
`password=` parameter; both are masked (`***`) wherever a URL is shown or stored
(`safe_url`), scrubbed from libpq's messages, which may echo the raw URL (`scrub`), and
removed from the URL a task is given (`without_password`): a task that must reach the
store gets the password only as `PGPASSWORD`, when `env.allow` names it.

Apart from location.py, which every command imports: urllib.parse costs about 2 ms of a
command's start-up, and only the commands that print a URL need it.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

MASK = "***"
# userinfo's password: after "//user:" up to the "@", as libpq reads it (which looks for
# the "@" up to the first "/": a "?" or "#" before it belongs to the password).
_USERINFO = re.compile(r"(//[^/@:]*:)([^/@]*)@")
_PARAMETER = re.compile(r"([?&]password=)([^&#]*)", re.IGNORECASE)


def safe_url(url: str) -> str:
    """`url` with any password replaced by `***`."""
    if not url.startswith(("postgres://", "postgresql://")):
        return url
    masked = _USERINFO.sub(lambda m: f"{m[1]}{MASK}@" if m[2] else m[0], url, count=1)
    return _PARAMETER.sub(lambda m: f"{m[1]}{MASK}", masked)


def passwords(url: str) -> list[str]:
    """The passwords `url` carries, as written and decoded (empty when there is none)."""
    if not url.startswith(("postgres://", "postgresql://")):
        return []
    userinfo = _USERINFO.search(url)
    found = ([userinfo[2]] if userinfo else []) + [m[2] for m in _PARAMETER.finditer(url)]
    return [form for raw in found if raw for form in dict.fromkeys((raw, unquote(raw)))]


def without_password(url: str) -> str:
    """`url` with no password at all: what a task is given as CORRAL_DB."""
    if not url.startswith(("postgres://", "postgresql://")):
        return url
    bare = _USERINFO.sub(lambda m: f"{m[1][:-1]}@", url, count=1)
    bare = re.sub(r"([?&])password=[^&#]*(&|(?=#)|$)", _drop_parameter, bare, flags=re.I)
    return bare.rstrip("?&")


def _drop_parameter(match: re.Match[str]) -> str:
    return match[1] if match[2] == "&" else ""


def password_of(url: str) -> str | None:
    """The password `url` carries (decoded), or None."""
    found = passwords(url)
    return unquote(found[0]) if found else None


def scrub(text: str, url: str) -> str:
    """`text` (a message that may echo `url`) with the URL shown safely and every form of
    its password masked."""
    text = text.replace(url, safe_url(url))
    for secret in passwords(url):
        text = text.replace(secret, MASK)
    return text
