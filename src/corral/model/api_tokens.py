"""API tokens: who may use `corral serve`, and for what.

A token is shown once, when it is made: `corral_<id>_<secret>`. The store keeps its id,
name, role, queues and expiry, and the SHA-256 of its secret, never the secret; a token
presented is found by its id and its secret's hash compared in constant time
(`hmac.compare_digest`), so neither the database nor the time an answer takes gives
the secret away. 32 random bytes of secret need no slow hash: there is nothing to guess.

Roles: a `viewer` reads; a `worker` may register, heartbeat, claim and report, for the
queues its token names (none: any) and only under its own claims; an `operator` may do
everything in its token's namespace; an `admin` may do everything in whichever namespace
a request names (server/auth.py), and make and revoke tokens over HTTP.
"""

from __future__ import annotations

import re
from datetime import datetime
from enum import StrEnum
from typing import Any

from corral.foundation.durations import iso
from corral.foundation.errors import InvalidInput
from corral.foundation.records import record
from corral.model.namespaces import DEFAULT_NAMESPACE

TOKEN_PREFIX = "corral_"  # noqa: S105 - the public start of every token, not a secret
ID_PREFIX = "k-"
_PRESENTED = re.compile(r"corral_(k-[0-9a-z]{10})_([A-Za-z0-9_-]{43})")
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


class Role(StrEnum):
    """What a token allows, each role everything the one before allows and more."""

    VIEWER = "viewer"
    WORKER = "worker"
    OPERATOR = "operator"
    ADMIN = "admin"  # the one role that acts across namespaces

    @property
    def article(self) -> str:
        """The role after its indefinite article, for messages: "an operator", "a viewer"."""
        return f"{'an' if self.value[0] in 'aeiou' else 'a'} {self.value}"


@record(frozen=True, slots=True, kw_only=True)
class ApiToken:
    """A token as the store keeps it (never its secret)."""

    id: str
    name: str
    role: Role
    queues: tuple[str, ...]  # a worker token's queues; () is any
    created_at: datetime
    expires_at: datetime | None
    revoked_at: datetime | None
    namespace: str = DEFAULT_NAMESPACE  # the one namespace its holder acts in

    def usable(self, now: datetime) -> bool:
        """Neither revoked nor expired at `now`."""
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md, `token list`): no secret, no hash."""
        return {
            "id": self.id,
            "name": self.name,
            "role": str(self.role),
            "queues": list(self.queues),
            "created_at": iso(self.created_at),
            "expires_at": iso(self.expires_at),
            "revoked_at": iso(self.revoked_at),
            "namespace": self.namespace,
        }


def new_secret() -> str:
    """32 random bytes, URL-safe: the part of a token only its holder knows."""
    import secrets  # noqa: PLC0415 - only `token create` makes one: off every command's start

    return secrets.token_urlsafe(32)


def secret_hash(secret: str) -> str:
    """What the store keeps of a secret."""
    import hashlib  # noqa: PLC0415 - hashlib's OpenSSL load (~2 ms) only where a token is read

    return hashlib.sha256(secret.encode()).hexdigest()


def presented(token_id: str, secret: str) -> str:
    """The token as its holder uses it."""
    return f"{TOKEN_PREFIX}{token_id}_{secret}"


def parse_presented(text: str) -> tuple[str, str] | None:
    """(id, secret) of a token as presented, or None when it is not one."""
    found = _PRESENTED.fullmatch(text)
    return None if found is None else (found.group(1), found.group(2))


def matches(secret: str, stored_hash: str | None) -> bool:
    """Whether `secret` is the one whose hash the store keeps, in constant time. With no
    hash (an unknown id) it is False after the same work, so an unknown id takes as long
    as a known one and the time of an answer tells nothing."""
    import hmac  # noqa: PLC0415 - as hashlib above

    known = stored_hash is not None
    return hmac.compare_digest(secret_hash(secret), stored_hash or secret_hash("")) and known


def check_name(name: Any) -> str:
    """A token's name, or InvalidInput."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise InvalidInput("name", "1 to 64 letters, digits, '.', '_' or '-'", name)
    return name
