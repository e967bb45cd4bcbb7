"""A message sent again under its idempotency key is the message sent before, on every
store (an outbox line whose reply was lost is tried again without being sent twice)."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral import Store
from corral.foundation.errors import InvalidInput
from corral.usecases import messages


def test_a_key_sent_again_is_the_same_message(store: Store) -> None:
    """The second send under a key returns the first message and appends nothing."""
    first = messages.send(store, to="orchestrator", type="note", body=1, sender="w", key="k-1")
    again = messages.send(store, to="orchestrator", type="note", body=1, sender="w", key="k-1")
    other = messages.send(store, to="orchestrator", type="note", body=2, sender="w", key="k-2")
    unkeyed = [messages.send(store, to="orchestrator", type="note", sender="w") for _ in "ab"]
    assert first.id == again.id
    inbox = messages.inbox(store, "orchestrator", unacked=False)
    assert [first.id, other.id, *(m.id for m in unkeyed)] == [m.id for m in inbox]


def test_a_key_is_a_name(store: Store) -> None:
    """A key with spaces, or longer than 100 characters, is refused naming the field."""
    for key in ("a b", "k" * 101):
        with pytest.raises(InvalidInput, match=r"^key: expected"):
            messages.send(store, to="orchestrator", type="note", sender="w", key=key)
    assert [] == messages.inbox(store, "orchestrator", unacked=False)
