"""Use cases of API tokens: make one (its secret shown once), list, revoke, authenticate.

Tokens guard `corral serve` (model/api_tokens.py says what each role allows). `authenticate`
is what the server asks of every request: the token found by its id, its secret compared
with the stored hash in constant time, and refused once revoked or expired, with one
answer for all of these, so a caller learns nothing of which failed.
"""

from __future__ import annotations

from corral.foundation.errors import InvalidInput
from corral.foundation.ids import new_id
from corral.model.actors import OPERATOR
from corral.model.api_tokens import (
    ID_PREFIX,
    ApiToken,
    Role,
    check_name,
    matches,
    new_secret,
    parse_presented,
    presented,
    secret_hash,
)
from corral.model.tasks import check_names
from corral.store import Store

MAX_EXPIRY_S = 10 * 365 * 86400.0


def create_token(
    store: Store,
    *,
    role: str,
    queues: tuple[str, ...] = (),
    name: str | None = None,
    expires_s: float | None = None,
) -> tuple[ApiToken, str]:
    """A new token and the only copy of it as its holder presents it."""
    try:
        checked_role = Role(role)
    except ValueError:
        raise InvalidInput("role", "one of viewer, worker, operator", role) from None
    check_names("queue", queues)
    if queues and checked_role is not Role.WORKER:
        raise InvalidInput("queue", "no queues for a viewer or operator token (they see all)")
    if expires_s is not None and not 0 < expires_s <= MAX_EXPIRY_S:
        raise InvalidInput("expires", "a duration greater than 0, at most 10 years", expires_s)
    token_id = new_id(ID_PREFIX)
    secret = new_secret()
    token = store.api_tokens.create_token(
        token_id=token_id,
        name=check_name(name if name is not None else token_id),
        role=checked_role,
        queues=queues,
        secret_hash=secret_hash(secret),
        expires_s=expires_s,
        actor=OPERATOR,
    )
    return token, presented(token_id, secret)


def revoke_token(store: Store, name: str) -> ApiToken:
    """Revoke token `name`: every request presenting it is refused from now on."""
    return store.api_tokens.revoke_token(check_name(name), actor=OPERATOR)


def list_tokens(store: Store) -> list[ApiToken]:
    """Every token, its secret never among what is shown."""
    return store.api_tokens.list_tokens()


def authenticate(store: Store, text: str) -> ApiToken | None:
    """The usable token `text` presents, or None (unknown, wrong secret, revoked, expired)."""
    parts = parse_presented(text)
    if parts is None:
        return None
    token_id, secret = parts
    found = store.api_tokens.token_secret_hash(token_id)
    if not matches(secret, None if found is None else found[1]) or found is None:
        return None
    return _usable(store, found[0])


def usable_token(store: Store, token_id: str) -> ApiToken | None:
    """Token `token_id` if it is neither revoked nor expired (a dashboard session's token,
    its secret not presented again), else None."""
    found = store.api_tokens.token_secret_hash(token_id)
    return None if found is None else _usable(store, found[0])


def _usable(store: Store, token: ApiToken) -> ApiToken | None:
    if token.revoked_at is not None:
        return None
    if token.expires_at is not None and not token.usable(store.now()):
        return None  # only a token that expires needs the store's clock (a read)
    return token
