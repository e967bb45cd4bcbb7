"""One of several orchestrators on a PostgreSQL store: its member row and the leader lock.

    join (member row, compare-and-set on its host) ─► standby
    standby ─every reconcile interval: leader lock free? take it, then the state row
            (compare-and-set on what was read: the lock proves the old leader's session
            ended)─► leader
    leader ─each reconcile interval: the lock re-asked on its own session; lost (the
            connection broke and another took it) or the state row taken ─► standby
    stop ─► member row stopped, lock released (a standby leads at its next try)

The state row keeps meaning "the orchestrator that reconciles": only the leader holds
it. SQLite has no lock (`Store.leader_lock()` is None) and keeps its single orchestrator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from corral.errors import Refused
from corral.model.orchestrators import (
    OrchestratorMember,
    OrchestratorState,
    OrchestratorStatus,
    Role,
    holder_is_dead,
)
from corral.policies import LivenessPolicy
from corral.store import Store
from corral.store.driver import LeaderLock


class Leadership:
    """This orchestrator's place among the orchestrators of its store."""

    def __init__(
        self,
        store: Store,
        lock: LeaderLock,
        *,
        pid: int,
        host: str,
        liveness: LivenessPolicy,
        pid_alive: Callable[[int, float], bool],
    ) -> None:
        self._store, self._lock = store, lock
        self._pid, self._host = pid, host
        self._liveness, self._pid_alive = liveness, pid_alive
        self._member: OrchestratorMember | None = None
        self.role = Role.STANDBY

    def join(self) -> OrchestratorMember:
        """Take this host's member row; Refused if a live orchestrator has this host name."""
        seen = next((m for m in self._store.list_orchestrators() if m.host == self._host), None)
        if seen is not None and seen.status is not OrchestratorStatus.STOPPED:
            started_s = seen.started_at.timestamp()
            if not holder_is_dead(
                seen,
                now=self._store.now(),
                host=self._host,
                pid_alive=lambda pid: self._pid_alive(pid, started_s),
                policy=self._liveness,
            ):
                raise _host_taken(seen)
        joined = self._store.join_orchestrators(pid=self._pid, host=self._host, seen=seen)
        if joined is None:
            raise _host_taken(seen)
        self._member = joined
        return joined

    def try_lead(self, config: dict[str, Any]) -> OrchestratorState | None:
        """Take the leader lock and then the state row; the row if this one leads now."""
        if not self._lock.try_acquire():
            return None
        seen = self._store.get_orchestrator()
        taken = self._store.acquire_orchestrator(
            pid=self._pid, host=self._host, config=config, seen=seen
        )
        if taken is not None:  # else the row changed since it was read: next interval
            self.role = Role.LEADER
        return taken

    def still_leads(self) -> bool:
        """Whether the lock's session still holds it (asked on that session)."""
        return self._lock.try_acquire()

    def step_down(self) -> None:
        """Back to standby: the lock is released, the state row left to the next leader."""
        self.role = Role.STANDBY
        self._lock.release()

    def beat(self, to: OrchestratorStatus) -> bool:
        """Beat the member row with the current role; False once it is not ours."""
        assert self._member is not None
        return self._store.beat_member(self._member, role=self.role, to=to)

    def leave(self) -> None:
        """Member row stopped, lock released."""
        self.beat(OrchestratorStatus.STOPPED)
        self.step_down()


def _host_taken(seen: OrchestratorMember | None) -> Refused:
    what = f"pid {seen.pid}" if seen else "another orchestrator"
    host = seen.host if seen else "this host"
    return Refused(
        f"an orchestrator already runs on this store as host {host} ({what}); "
        "stop it first, or give this one another --hostname"
    )
