"""The dashboard's sign-in sessions on SQLite and PostgreSQL: the cookie is a session of
its own, signing out ends it for good, and its token is checked on every request."""

from __future__ import annotations

from corral.usecases.api_tokens import create_token, revoke_token
from corral.usecases.sign_ins import session_token, sign_in, sign_out


def test_a_session_holds_until_signed_out(store):
    """The cookie names the token's session, not the token; after sign-out it names nobody,
    and a second sign-out changes nothing."""
    token, presented = create_token(store, role="viewer", name="ann")
    opened = sign_in(store, presented, max_age_s=3600)
    assert opened is not None
    _, cookie = opened
    assert presented not in cookie
    assert token.id == session_token(store, cookie).id
    sign_out(store, cookie)
    assert session_token(store, cookie) is None
    sign_out(store, cookie)
    assert session_token(store, cookie) is None
    assert session_token(store, sign_in(store, presented, max_age_s=3600)[1]) is not None


def test_a_wrong_secret_an_expiry_or_a_revoked_token_refuse_the_session(store, clock):
    """A forged secret or a token instead of a session is nobody; so is a session past its
    age, and every session of a revoked token."""
    _, presented = create_token(store, role="operator", name="bob")
    _, cookie = sign_in(store, presented, max_age_s=60)
    forged = cookie[:-4] + ("AAAA" if not cookie.endswith("AAAA") else "BBBB")
    assert session_token(store, forged) is None
    sign_out(store, forged)  # a forged cookie cannot end the real session
    assert session_token(store, cookie) is not None
    assert session_token(store, presented) is None
    assert session_token(store, "corral_s_s-../../etc_\x00") is None
    clock.advance(61)
    assert session_token(store, cookie) is None
    _, fresh = sign_in(store, presented, max_age_s=60)
    revoke_token(store, "bob")
    assert session_token(store, fresh) is None
    assert sign_in(store, presented, max_age_s=60) is None
