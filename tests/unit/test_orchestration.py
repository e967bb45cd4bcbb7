"""Who holds the orchestrator row: a live holder keeps it, a dead or silent one loses it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from corral.foundation.settings import Settings
from corral.model.orchestrators import (
    OrchestratorMember,
    OrchestratorState,
    OrchestratorStatus,
    Role,
    fleet,
    holder_is_dead,
)

NOW = datetime(2030, 1, 1, tzinfo=UTC)
POLICY = Settings(heartbeat_interval_s=10, dead_after_missed=3).liveness


def _row(status=OrchestratorStatus.RUNNING, host="here", beat_s_ago=1.0):
    return OrchestratorState(
        status=status,
        pid=42,
        host=host,
        started_at=NOW - timedelta(hours=1),
        heartbeat_at=NOW - timedelta(seconds=beat_s_ago),
        last_reconcile_at=None,
        stopped_at=None,
        stop_timeout_s=None,
    )


def _dead(row, alive=True, host="here"):
    return holder_is_dead(row, now=NOW, host=host, pid_alive=lambda pid: alive, policy=POLICY)


def test_a_live_holder_that_beats_keeps_the_row():
    """Its pid runs here and it beat recently."""
    assert not _dead(_row())


def test_a_holder_whose_pid_is_gone_on_this_host_is_dead_at_once():
    """No waiting for heartbeats when the process is known to be gone."""
    assert _dead(_row(), alive=False)


def test_a_holder_on_another_host_is_judged_by_its_heartbeat_only():
    """Its pid means nothing here; silence past dead_after_missed beats does."""
    assert not _dead(_row(host="there"), alive=False)
    assert _dead(_row(host="there", beat_s_ago=40.0))


def test_a_stopped_row_has_no_holder_to_be_dead():
    """stopped is free to take: nothing to judge."""
    assert not _dead(_row(status=OrchestratorStatus.STOPPED), alive=False)


def _member(host, role=Role.STANDBY, status=OrchestratorStatus.RUNNING, beat_s_ago=1.0):
    return OrchestratorMember(
        host=host,
        pid=7,
        role=role,
        status=status,
        started_at=NOW - timedelta(hours=1),
        heartbeat_at=NOW - timedelta(seconds=beat_s_ago),
        stopped_at=None,
    )


def _fleet(row, members):
    shown = fleet(row, members, now=NOW, policy=POLICY)
    return shown["leader"], [(o["host"], o["role"], o["status"]) for o in shown["orchestrators"]]


def test_without_members_the_live_row_holder_is_the_one_leader():
    """SQLite: the state row's holder is listed alone, as leader; a stopped row lists none."""
    assert ("here", [("here", "leader", "running")]) == _fleet(_row(), [])
    assert (None, []) == _fleet(_row(status=OrchestratorStatus.STOPPED), [])


def test_members_are_listed_but_stopped_ones_and_silent_ones_show_dead():
    """PostgreSQL: the row's host leads; stopped members are left out, silent ones are dead."""
    members = [
        _member("a", Role.LEADER),
        _member("b"),
        _member("c", status=OrchestratorStatus.STOPPED),
        _member("d", beat_s_ago=3600),
    ]
    expected = [("a", "leader", "running"), ("b", "standby", "running"), ("d", "standby", "dead")]
    assert ("a", expected) == _fleet(_row(host="a"), members)
