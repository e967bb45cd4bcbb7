"""The connection bounds of `corral serve` as a table: budget, per client, reserve
(server/connection_guard.py), without a server."""

from __future__ import annotations

from corral.server.connection_guard import (
    RESERVE,
    RESERVE_PER_CLIENT,
    Place,
    Tally,
    tally_for,
)


def test_the_bounds_follow_the_descriptor_limit():
    """1,024 descriptors keep 256 for the rest: 768 connections, 192 per client."""
    assert (768, 192) == (tally_for(1024).budget, tally_for(1024).per_client)
    assert (32, 8) == (tally_for(64).budget, tally_for(64).per_client)


def test_a_client_past_its_share_gets_the_reserve_then_nothing():
    """A client's connections past its share take reserve places, RESERVE_PER_CLIENT of
    them, then are refused; another client still gets a place of the budget."""
    tally = Tally(budget=10, per_client=3)
    taken = [tally.admit("a") for _ in range(3 + RESERVE_PER_CLIENT + 1)]
    assert [Place.BUDGET] * 3 + [Place.RESERVE] * RESERVE_PER_CLIENT + [None] == taken
    assert Place.BUDGET == tally.admit("b")
    tally.release("a", Place.BUDGET)
    assert Place.BUDGET == tally.admit("a")


def test_a_full_budget_leaves_the_reserve_and_a_release_frees_a_place():
    """With the budget full, every client gets at most the reserve, RESERVE in all."""
    tally = Tally(budget=2, per_client=2)
    assert [Place.BUDGET, Place.BUDGET] == [tally.admit("a"), tally.admit("a")]
    clients = [f"c{i}" for i in range(RESERVE + 1)]
    taken = [tally.admit(client) for client in clients]
    assert [Place.RESERVE] * RESERVE + [None] == taken
    tally.release("c0", Place.RESERVE)
    assert Place.RESERVE == tally.admit("z")
    assert {} == {k: v for k, v in tally.by_client[Place.RESERVE].items() if k == "c0"}
