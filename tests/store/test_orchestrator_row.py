"""The orchestrator's state row: taken by compare-and-set, moved only by its holder."""

from __future__ import annotations

import pytest

from corral import EventFilter
from corral.foundation.errors import InvalidInput, Refused
from corral.model.orchestrators import OrchestratorStatus

RUNNING = frozenset({OrchestratorStatus.STARTING})


def test_a_fresh_store_has_a_stopped_row_with_no_holder(store):
    """The migration creates the singleton row."""
    state = store.orchestrators.get_orchestrator()
    assert (OrchestratorStatus.STOPPED, None, []) == (state.status, state.pid, state.slots)


def test_a_stopped_row_is_taken_and_the_start_recorded(store):
    """The first start wins the row: starting, pid, host, config; an event says so."""
    taken = store.orchestrators.acquire_orchestrator(
        pid=10, host="a", config={"workers": 3}, seen=store.orchestrators.get_orchestrator()
    )
    assert taken is not None
    assert (OrchestratorStatus.STARTING, 10, "a") == (taken.status, taken.pid, taken.host)
    assert {"workers": 3} == taken.config
    names = [e.name for e in store.events.list_events(EventFilter(limit=10))]
    assert "orchestrator.started" in names


def test_the_row_records_the_takers_key_hash_and_a_later_taker_replaces_it(store, clock):
    """The hash the taker was started with is read back (not in the JSON shape); the next
    holder's, none included, replaces it; a hash that is no SHA-256 in hex is refused."""
    seen = store.orchestrators.get_orchestrator()
    taken = store.orchestrators.acquire_orchestrator(
        pid=10, host="a", config={}, seen=seen, key_hash="c" * 64
    )
    assert "c" * 64 == taken.key_hash == store.orchestrators.get_orchestrator().key_hash
    assert "key_hash" not in taken.to_dict()
    clock.advance(1)
    seen = store.orchestrators.get_orchestrator()
    store.orchestrators.acquire_orchestrator(pid=11, host="a", config={}, seen=seen)
    assert store.orchestrators.get_orchestrator().key_hash is None
    with pytest.raises(InvalidInput, match=r"^key_hash: expected a SHA-256"):
        store.orchestrators.acquire_orchestrator(
            pid=12, host="a", config={}, seen=seen, key_hash="not hex"
        )


def test_two_starts_from_the_same_observation_have_one_winner(store):
    """Both saw the row stopped; the second compare-and-set finds it taken."""
    seen = store.orchestrators.get_orchestrator()
    assert (
        store.orchestrators.acquire_orchestrator(pid=10, host="a", config={}, seen=seen) is not None
    )
    assert store.orchestrators.acquire_orchestrator(pid=11, host="a", config={}, seen=seen) is None
    assert 10 == store.orchestrators.get_orchestrator().pid


def test_a_held_row_is_taken_over_only_as_it_was_observed(store, clock):
    """A takeover names the holder it judged dead; if that holder beat since, it fails."""
    store.orchestrators.acquire_orchestrator(
        pid=10, host="a", config={}, seen=store.orchestrators.get_orchestrator()
    )
    seen = store.orchestrators.get_orchestrator()
    clock.advance(1)
    assert store.orchestrators.beat_orchestrator(pid=10, host="a", slots=[], reconciled=False)
    assert store.orchestrators.acquire_orchestrator(pid=11, host="a", config={}, seen=seen) is None
    fresh = store.orchestrators.get_orchestrator()
    taken = store.orchestrators.acquire_orchestrator(pid=11, host="a", config={}, seen=fresh)
    assert taken is not None and 11 == taken.pid
    assert not store.orchestrators.beat_orchestrator(pid=10, host="a", slots=[], reconciled=False)


def test_only_the_holder_moves_the_row_and_only_from_allowed_states(store):
    """set_orchestrator_status is a compare-and-set on (pid, host) and the current status."""
    store.orchestrators.acquire_orchestrator(
        pid=10, host="a", config={}, seen=store.orchestrators.get_orchestrator()
    )
    with pytest.raises(Refused, match="not held by pid 11"):
        store.orchestrators.set_orchestrator_status(
            pid=11, host="a", to=OrchestratorStatus.RUNNING, allowed=RUNNING
        )
    moved = store.orchestrators.set_orchestrator_status(
        pid=10, host="a", to=OrchestratorStatus.RUNNING, allowed=RUNNING
    )
    assert OrchestratorStatus.RUNNING == moved.status
    with pytest.raises(Refused):
        store.orchestrators.set_orchestrator_status(
            pid=10, host="a", to=OrchestratorStatus.RUNNING, allowed=RUNNING
        )


def test_beats_record_the_pool_and_reconcile_passes(store, clock):
    """A beat stores the slots; a reconciling beat stamps last_reconcile_at."""
    store.orchestrators.acquire_orchestrator(
        pid=10, host="a", config={}, seen=store.orchestrators.get_orchestrator()
    )
    slots = [{"name": "slot-1", "state": "running"}]
    store.orchestrators.beat_orchestrator(pid=10, host="a", slots=slots, reconciled=False)
    assert store.orchestrators.get_orchestrator().last_reconcile_at is None
    clock.advance(5)
    store.orchestrators.beat_orchestrator(pid=10, host="a", slots=slots, reconciled=True)
    state = store.orchestrators.get_orchestrator()
    assert (slots, clock.now()) == (state.slots, state.last_reconcile_at)


def test_a_stop_request_marks_the_row_stopping_with_its_timeout(store):
    """request_orchestrator_stop: stopping, with the time tasks may take; refused when stopped."""
    with pytest.raises(Refused, match="no orchestrator is running"):
        store.orchestrators.request_orchestrator_stop(stop_timeout_s=5)
    store.orchestrators.acquire_orchestrator(
        pid=10, host="a", config={}, seen=store.orchestrators.get_orchestrator()
    )
    state = store.orchestrators.request_orchestrator_stop(stop_timeout_s=5)
    assert (OrchestratorStatus.STOPPING, 5) == (state.status, state.stop_timeout_s)
    stopped = store.orchestrators.set_orchestrator_status(
        pid=10,
        host="a",
        to=OrchestratorStatus.STOPPED,
        allowed=frozenset({OrchestratorStatus.STOPPING}),
    )
    assert stopped.stopped_at is not None
