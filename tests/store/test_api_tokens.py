"""Conformance: API tokens on every store: made, found only by their whole secret, refused
once revoked or expired, and never kept or shown in clear."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral import FakeClock, InvalidInput, Refused, Store
from corral.foundation.errors import NotFound
from corral.model.api_tokens import Role
from corral.usecases.api_tokens import authenticate, create_token, list_tokens, revoke_token

HASH_STAYS = "the secret's hash never leaves the server"
NOT_OVER_HTTP = {
    "test_a_token_authenticates_by_its_whole_secret_only": HASH_STAYS,
    "test_revoked_and_expired_tokens_are_refused": HASH_STAYS,
}


def test_a_token_authenticates_by_its_whole_secret_only(store: Store) -> None:
    """The token as printed authenticates; a changed secret, a changed id, another shape do
    not; the store keeps only the secret's hash."""
    token, shown = create_token(store, role="worker", queues=("code",), name="ci")
    assert token == authenticate(store, shown)
    assert (Role.WORKER, ("code",)) == (token.role, token.queues)
    secret = shown.removeprefix(f"corral_{token.id}_")  # it may hold "_" itself
    assert 43 == len(secret)
    wrong = shown[:-1] + ("A" if shown[-1] != "A" else "B")
    other_id = shown.replace(token.id, "k-0000000000")
    for bad in (wrong, other_id, "", "Bearer " + shown, shown + "x", secret):
        assert authenticate(store, bad) is None, bad
    assert secret not in str([t.to_dict() for t in list_tokens(store)])


def test_revoked_and_expired_tokens_are_refused(store: Store, clock: FakeClock) -> None:
    """Revoked: refused from then on, and a second revoke says so; expired: refused at
    its instant, and listed with both."""
    _, kept = create_token(store, role="operator", name="ops")
    _, short = create_token(store, role="viewer", name="short", expires_s=60)
    revoked = revoke_token(store, "ops")
    assert revoked.revoked_at is not None and authenticate(store, kept) is None
    with pytest.raises(Refused, match="revoked already"):
        revoke_token(store, "ops")
    with pytest.raises(NotFound):
        revoke_token(store, "nobody")
    clock.advance(59.9)
    assert authenticate(store, short) is not None
    assert store.api_tokens.any_usable_token()
    clock.advance(0.1)
    assert authenticate(store, short) is None
    assert not store.api_tokens.any_usable_token()
    assert ["ops", "short"] == [t.name for t in list_tokens(store)]


def test_bad_token_input_is_refused_and_writes_nothing(store: Store) -> None:
    """A role, name, queue or expiry that is not one: InvalidInput, no token made; a name
    taken: Refused."""
    create_token(store, role="viewer", name="taken")
    for fields in (
        {"role": "boss"},
        {"role": "viewer", "name": "../x"},
        {"role": "viewer", "queues": ("code",)},
        {"role": "worker", "queues": ("bad queue",)},
        {"role": "viewer", "expires_s": 0},
        {"role": "viewer", "expires_s": 1e12},
    ):
        with pytest.raises(InvalidInput):
            create_token(store, **fields)  # type: ignore[arg-type]
    with pytest.raises(Refused, match="exists"):
        create_token(store, role="operator", name="taken")
    assert ["taken"] == [t.name for t in list_tokens(store) if not t.name.startswith("served-")]
