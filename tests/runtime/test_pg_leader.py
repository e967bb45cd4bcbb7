"""Several orchestrators on one PostgreSQL store: one leads, the others stand by and take over.

Real processes, each started as a "host" of its own (`--hostname`, its own folder); the
leader is killed with SIGKILL.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import psycopg

from corral import TaskStatus
from corral.model.orchestrators import OrchestratorStatus, Role

INTERVAL_S = 1.0  # CORRAL_RECONCILE_INTERVAL_S of the pool's environment


def _host(pool: Any, name: str) -> Path:
    folder = pool.folder / name
    folder.mkdir()
    return folder


def _status(pool: Any) -> dict[str, Any]:
    done = pool.corral("orchestrator", "status", "--json")
    assert 0 == done.returncode, done.stderr
    return json.loads(done.stdout)


def _members(pool: Any) -> dict[str, tuple[Role, OrchestratorStatus]]:
    return {m.host: (m.role, m.status) for m in pool.store.orchestrators.list_orchestrators()}


def test_one_leads_and_a_standby_takes_over_within_two_intervals_of_a_kill(pg_pool: Any):
    """SIGKILL the leader: the standby leads within two reconcile intervals and works."""
    running = OrchestratorStatus.RUNNING
    leader = pg_pool.start("--hostname", "host-a", workers=1, cwd=_host(pg_pool, "a"))
    pg_pool.wait(lambda: pg_pool.store.orchestrators.get_orchestrator().status is running)
    pg_pool.start("--hostname", "host-b", workers=1, cwd=_host(pg_pool, "b"))
    both = {"host-a": (Role.LEADER, running), "host-b": (Role.STANDBY, running)}
    pg_pool.wait(lambda: both == _members(pg_pool))

    shown = _status(pg_pool)
    assert "host-a" == shown["leader"]
    assert [("host-a", leader.pid, "leader", "running"), ("host-b", "standby", "running")] == [
        (o["host"], o["pid"], o["role"], o["status"])
        if o["role"] == "leader"
        else (o["host"], o["role"], o["status"])
        for o in shown["orchestrators"]
    ]

    os.kill(leader.pid, signal.SIGKILL)
    leader.wait(10)
    killed_at = pg_pool.store.now()
    pg_pool.wait(lambda: "host-b" == pg_pool.store.orchestrators.get_orchestrator().host)
    took_over = pg_pool.store.orchestrators.get_orchestrator()
    assert (took_over.started_at - killed_at).total_seconds() < 2 * INTERVAL_S
    pg_pool.wait(lambda: pg_pool.store.orchestrators.get_orchestrator().status is running)
    assert "host-b" == _status(pg_pool)["leader"]

    (task_id,) = pg_pool.add(1)
    pg_pool.wait(lambda: pg_pool.store.tasks.get_task(task_id).status is TaskStatus.DONE)


def test_a_second_orchestrator_under_a_live_host_name_is_refused(pg_pool: Any):
    """Two orchestrators may not share a host name: the second exits 1, naming the first."""
    first = pg_pool.start("--hostname", "host-a", workers=1, cwd=_host(pg_pool, "a"))
    pg_pool.wait(lambda: "host-a" in _members(pg_pool))
    second = pg_pool.start("--hostname", "host-a", workers=1, cwd=_host(pg_pool, "b"))
    assert 1 == second.wait(30)
    assert f"as host host-a (pid {first.pid})" in pg_pool.log(1)
    assert first.poll() is None


def test_a_leader_stopped_gracefully_hands_over_and_status_shows_both(pg_pool: Any):
    """`orchestrator stop` ends the leader; the standby leads; the human status names it."""
    running = OrchestratorStatus.RUNNING
    a, b = _host(pg_pool, "a"), _host(pg_pool, "b")
    leader = pg_pool.start("--hostname", "host-a", workers=1, cwd=a)
    pg_pool.wait(lambda: pg_pool.store.orchestrators.get_orchestrator().status is running)
    pg_pool.start("--hostname", "host-b", workers=1, cwd=b)
    pg_pool.wait(lambda: "host-b" in _members(pg_pool))
    human = pg_pool.corral("orchestrator", "status").stdout
    assert "leader: host-a" in human
    assert ["host-a", "leader", "running"] == _line_of(human, "host-a")
    assert ["host-b", "standby", "running"] == _line_of(human, "host-b")

    os.kill(leader.pid, signal.SIGTERM)
    assert 0 == leader.wait(30)
    pg_pool.wait(lambda: "host-b" == pg_pool.store.orchestrators.get_orchestrator().host)
    assert OrchestratorStatus.STOPPED == _members(pg_pool)["host-a"][1]
    assert ["host-b"] == [o["host"] for o in _status(pg_pool)["orchestrators"]]
    overview = json.loads(pg_pool.corral("status", "--json").stdout)["orchestrator"]
    assert ("host-b", ["host-b"]) == (
        overview["leader"],
        [o["host"] for o in overview["orchestrators"]],
    )


def _line_of(human: str, host: str) -> list[str]:
    """HOST, ROLE and STATUS of the orchestrators table's line for `host`."""
    (line,) = [x.split() for x in human.splitlines() if x.startswith(host)]
    return [line[0], line[2], line[3]]


def test_a_leader_whose_lock_session_is_ended_stands_by_then_leads_again(pg_pool: Any):
    """The server ends the lock's session: the leader stops leading, then takes the lock back."""
    running = OrchestratorStatus.RUNNING
    pg_pool.start("--hostname", "host-a", workers=1, cwd=_host(pg_pool, "a"))
    pg_pool.wait(lambda: pg_pool.store.orchestrators.get_orchestrator().status is running)
    with psycopg.connect(pg_pool.db, autocommit=True) as conn:
        ended = conn.execute(
            """SELECT pg_terminate_backend(l.pid) FROM pg_locks l JOIN pg_stat_activity a
               ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted
               AND a.datname = current_database()
               AND l.objid = hashtext(current_schema())::oid"""
        ).fetchall()
    assert [(True,)] == ended
    pg_pool.wait(lambda: "orchestrator.standing_by" in pg_pool.log(0))
    assert "reason='leader lock lost'" in pg_pool.log(0)
    pg_pool.wait(lambda: pg_pool.log(0).count("orchestrator.leading") == 2)
    pg_pool.wait(lambda: pg_pool.store.orchestrators.get_orchestrator().status is running)
