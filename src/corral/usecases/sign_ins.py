"""Use cases of the dashboard's sign-in: open a session with a token, know it again on
each request, end it.

The session cookie holds a session's id and secret (`corral_s_ID_SECRET`), never the API
token it was opened with: a copy of the cookie taken after sign-out, or read from a
browser left open, is refused, and it was never a token the API would take. The store
keeps the secret's hash and the token's id; each request checks the secret in constant
time, the session (not ended, not expired) and the token (not revoked, not expired), with
one answer for every failure, as `authenticate` does.
"""

from __future__ import annotations

import re

from corral.foundation.ids import new_id
from corral.model.api_tokens import ApiToken, matches, new_secret, secret_hash
from corral.store import Store
from corral.usecases.api_tokens import authenticate, usable_token

SESSION_PREFIX = "corral_s_"
_ID_PREFIX = "s-"
_PRESENTED = re.compile(r"corral_s_(s-[0-9a-z]{10})_([A-Za-z0-9_-]{43})")


def sign_in(store: Store, presented_token: str, *, max_age_s: float) -> tuple[ApiToken, str] | None:
    """(the token, the session cookie's value) of a new session opened with the token
    `presented_token`, usable for `max_age_s` seconds; None if the token is not usable."""
    token = authenticate(store, presented_token)
    if token is None:
        return None
    session_id, secret = new_id(_ID_PREFIX), new_secret()
    store.sign_ins.start_dashboard_session(
        session_id=session_id,
        secret_hash=secret_hash(secret),
        token_id=token.id,
        expires_s=max_age_s,
    )
    return token, f"{SESSION_PREFIX}{session_id}_{secret}"


def session_token(store: Store, cookie: str) -> ApiToken | None:
    """The token of the live session `cookie` presents, or None (no such session, a wrong
    secret, signed out, expired; or its token revoked or expired)."""
    found = _PRESENTED.fullmatch(cookie)
    if found is None:
        return None
    session_id, secret = found.group(1), found.group(2)
    session = store.sign_ins.dashboard_session(session_id)
    if not matches(secret, None if session is None else session[1]) or session is None:
        return None
    return usable_token(store, session[0])


def sign_out(store: Store, cookie: str) -> None:
    """End the session `cookie` presents, if it is one and its secret holds: from now on
    the cookie signs nobody in."""
    found = _PRESENTED.fullmatch(cookie)
    if found is None:
        return
    session = store.sign_ins.dashboard_session(found.group(1))
    if matches(found.group(2), None if session is None else session[1]):
        store.sign_ins.end_dashboard_session(found.group(1))
