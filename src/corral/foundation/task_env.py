"""Which variables a task's command gets, and why each other one is withheld. Pure: no I/O.

Agents run untrusted content (a repository's files, an issue's text), so a task's command
gets an allow-list environment, in two layers:

1. The allow-list: the names a command needs to run at all (`TASK_BASE`: PATH, HOME, the
   locale, the terminal, the user, corral's own CORRAL_* ...), the names the agent's
   profile declares (model/agents.py: `ANTHROPIC_API_KEY` for claude), and `[env] allow`.
   Every other name is withheld, "not on the allow-list" (or, when it looks like a secret
   too, with the secret filter's reason, which says more).
2. The secret filter, on what the allow-list let through: a name an `[env] deny` pattern
   matches (`*TOKEN`, `*_KEY` ...), or a value that holds a secret (`secret_in`).

A name written out whole, in `[env] allow` or in a profile's `env`, is a grant: it passes
both layers (the user named that variable; a profile names its agent's key). A pattern
(`MY_APP_*`, `*`) only opens the first layer, so `allow = ["*"]` passes every variable
that does not look like a secret. The worker process itself (`for_worker`) gets the second
layer only: it is corral's own code, and needs the store's location, proxies, git's and
ssh's settings to do its work.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

#: What every task's command gets: enough to run a program as the user would.
#: SHELL: agents start their shell tools with it (Claude Code's Bash tool runs $SHELL).
#: The proxies and CA bundles: an agent reaches its provider's API the way corral does
#: (a proxy URL holding a password is still withheld by the secret filter).
#: git's identity and configuration files: an agent that commits does so as the user.
#: PYTHONPATH: the `corral` a task runs (`corral done`) is the worker's own corral, also
#: where that one is found by PYTHONPATH (a source checkout).
TASK_BASE = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "SHELL",
    "CORRAL_*",
    "PYTHONPATH",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_CONFIG_GLOBAL",
    "GIT_CONFIG_SYSTEM",
    "GIT_CONFIG_NOSYSTEM",
)

NOT_ALLOWED = "not on the allow-list"
_WILDCARDS = frozenset("*?[")

# Each: what a value holding it is, and how to find it (without regard to case).
_SECRET_VALUES = (
    ("a URL's password", r"[a-z][a-z0-9+.-]*://[^/@\s:]*:[^/@\s]+@"),
    # A key=value DSN or a URL query: `host=db password=x`, `?password=x`, `;pwd=x`.
    ("a password= parameter", r"(?<![a-z0-9_])(?:password|passwd|pwd|pass)\s*=\s*['\"]?[^\s&;'\"]"),
    ("a Slack or Discord webhook", r"hooks\.slack\.com/|discord(?:app)?\.com/api/webhooks/"),
    ("a private key", r"\"private_key\"\s*:|-----BEGIN [A-Z ]*PRIVATE KEY-----"),
)
_FOUND = [(what, re.compile(pattern, re.I)) for what, pattern in _SECRET_VALUES]
# `Basic dXNlcjpwYXNz`, `Bearer eyJ...`: an Authorization header's credentials. Prose
# ("Basic authentication") is not: the word after the scheme must not be a plain word.
_HEADER = re.compile(r"(?<![a-z0-9])(?:basic|bearer)\s+([A-Za-z0-9+/._~-]{8,}=*)", re.I)
_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]*")


def secret_in(value: str) -> str | None:
    """What secret `value` holds ("a URL's password" ...), or None when it looks like none."""
    for what, pattern in _FOUND:
        if pattern.search(value):
            return what
    for found in _HEADER.finditer(value):
        if not _PLAIN_WORD.fullmatch(found[1]):
            return "an Authorization header's credentials"
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Sifted:
    """An environment sifted: what passes, and each name withheld with why (never a value)."""

    kept: dict[str, str]
    withheld: dict[str, str]  # name -> reason: NOT_ALLOWED, "name matches *_TOKEN" ...

    @property
    def withheld_names(self) -> list[str]:
        """The names withheld, sorted: what the logs show."""
        return sorted(self.withheld)


def sift(
    environ: Mapping[str, str],
    *,
    deny: Iterable[str],
    allow: Iterable[str],
    allow_list: bool,
) -> Sifted:
    """`environ` through the secret filter (`deny` patterns and `secret_in`), and first,
    with `allow_list`, through the allow-list (`TASK_BASE` and `allow`); a name that
    `allow` writes out whole passes both."""
    deny, allow = tuple(deny), tuple(allow)
    granted = {name.upper() for name in allow if not _WILDCARDS & set(name)}
    opened = (*TASK_BASE, *allow)
    kept, withheld = {}, {}
    for name, value in environ.items():
        reason = None
        if name.upper() not in granted:
            reason = _secret_reason(name, value, deny)  # first: the reason worth telling
            if reason is None and allow_list and matching(name, opened) is None:
                reason = NOT_ALLOWED
        if reason is None:
            kept[name] = value
        else:
            withheld[name] = reason
    return Sifted(kept=kept, withheld=withheld)


def _secret_reason(name: str, value: str, deny: tuple[str, ...]) -> str | None:
    pattern = matching(name, deny)
    if pattern is not None:
        return f"name matches {pattern}"
    found = secret_in(value)
    return None if found is None else f"value holds {found}"


def matching(name: str, patterns: Iterable[str]) -> str | None:
    """The first of `patterns` (shell patterns, without regard to case) naming `name`."""
    upper = name.upper()
    for pattern in patterns:
        if fnmatch.fnmatchcase(upper, pattern.upper()):
            return pattern
    return None
