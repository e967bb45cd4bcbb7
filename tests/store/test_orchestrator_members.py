"""Member rows of several orchestrators: joined by compare-and-set, beaten by their holder."""

from __future__ import annotations

from corral.model.orchestrators import OrchestratorStatus, Role

RUNNING, STOPPED = OrchestratorStatus.RUNNING, OrchestratorStatus.STOPPED


def test_a_host_joins_as_a_running_standby(store):
    """The first join of a host creates its row: standby, running, this pid."""
    joined = store.orchestrators.join_orchestrators(pid=10, host="a", seen=None)
    assert joined is not None
    assert ("a", 10, Role.STANDBY, RUNNING) == (
        joined.host,
        joined.pid,
        joined.role,
        joined.status,
    )
    assert [joined] == store.orchestrators.list_orchestrators()


def test_a_live_host_row_refuses_a_second_join(store):
    """Two orchestrators under one host name: the second, from the same observation, loses."""
    assert store.orchestrators.join_orchestrators(pid=10, host="a", seen=None) is not None
    assert store.orchestrators.join_orchestrators(pid=11, host="a", seen=None) is None
    assert [10] == [m.pid for m in store.orchestrators.list_orchestrators()]


def test_a_dead_holder_is_replaced_only_as_it_was_observed(store, clock):
    """A join names the holder it judged dead; if that holder beat since, the join fails."""
    first = store.orchestrators.join_orchestrators(pid=10, host="a", seen=None)
    (seen,) = store.orchestrators.list_orchestrators()
    clock.advance(1)
    assert store.orchestrators.beat_member(first, role=Role.STANDBY, to=RUNNING)
    assert store.orchestrators.join_orchestrators(pid=11, host="a", seen=seen) is None
    (fresh,) = store.orchestrators.list_orchestrators()
    assert store.orchestrators.join_orchestrators(pid=11, host="a", seen=fresh) is not None
    assert not store.orchestrators.beat_member(first, role=Role.STANDBY, to=RUNNING)


def test_a_stopped_row_is_joined_again_and_beats_record_the_role(store, clock):
    """A member that stopped leaves its row to the next orchestrator of its host."""
    first = store.orchestrators.join_orchestrators(pid=10, host="a", seen=None)
    assert store.orchestrators.beat_member(first, role=Role.LEADER, to=STOPPED)
    assert not store.orchestrators.beat_member(first, role=Role.LEADER, to=RUNNING)
    (stopped,) = store.orchestrators.list_orchestrators()
    assert (STOPPED, Role.LEADER) == (stopped.status, stopped.role)
    clock.advance(1)
    again = store.orchestrators.join_orchestrators(pid=12, host="a", seen=None)
    assert again is not None and (12, Role.STANDBY) == (again.pid, again.role)


def test_taking_the_state_row_demotes_the_other_leaders(store):
    """The new leader's take-over leaves no other member marked leader."""
    old = store.orchestrators.join_orchestrators(pid=10, host="a", seen=None)
    new = store.orchestrators.join_orchestrators(pid=20, host="b", seen=None)
    store.orchestrators.beat_member(old, role=Role.LEADER, to=RUNNING)
    store.orchestrators.acquire_orchestrator(
        pid=20, host="b", config={}, seen=store.orchestrators.get_orchestrator()
    )
    store.orchestrators.beat_member(new, role=Role.LEADER, to=RUNNING)
    assert {"a": Role.STANDBY, "b": Role.LEADER} == {
        m.host: m.role for m in store.orchestrators.list_orchestrators()
    }
