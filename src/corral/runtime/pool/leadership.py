"""One of several orchestrators on a PostgreSQL store: its member row, the leader lock, and
what it does as leader or standby (roles.py: the `Member` role).

    join (member row, compare-and-set on its host) ─► standby
    standby ─every reconcile interval: leader lock free? take it, then the state row
            (compare-and-set on what was read: the lock proves the old leader's session
            ended) ─► leader (a pass at once, then running); else clean up this host
    leader ─each reconcile interval: the lock re-asked on its own session; lost (the
            connection broke and another took it) ─► standby; else reconcile
           ─each beat: the state row taken by another leader ─► standby
    stop ─► state row stopped (leader), member row stopped, lock released (a standby
            leads at its next try)

The state row keeps meaning "the orchestrator that reconciles": only the leader holds
it. The member row records each orchestrator's role and status; losing it (another
orchestrator judged this one dead and took its host name) ends this one.
"""

from __future__ import annotations

import logging
from typing import Any

from corral.foundation.errors import Refused
from corral.foundation.logs import event
from corral.foundation.policies import LivenessPolicy
from corral.foundation.processes import process_alive
from corral.model.orchestrators import (
    OrchestratorMember,
    OrchestratorStatus,
    Role,
    holder_is_dead,
)
from corral.runtime.pool.state_row import StateRow
from corral.runtime.pool.upkeep import Upkeep
from corral.store import Store
from corral.store.driver import LeaderLock


class Member:
    """This orchestrator's place among the orchestrators of a PostgreSQL store."""

    def __init__(
        self,
        store: Store,
        lock: LeaderLock,
        row: StateRow,
        upkeep: Upkeep,
        *,
        pid: int,
        host: str,
        liveness: LivenessPolicy,
        log: logging.Logger,
    ) -> None:
        self._store, self._lock, self._row, self._upkeep = store, lock, row, upkeep
        self._pid, self._host, self._liveness, self._log = pid, host, liveness, log
        self._member: OrchestratorMember | None = None
        self._role = Role.STANDBY

    def take(self) -> None:
        """Take this host's member row; Refused if a live orchestrator has this host name."""
        seen = next(
            (m for m in self._store.orchestrators.list_orchestrators() if m.host == self._host),
            None,
        )
        if seen is not None and seen.status is not OrchestratorStatus.STOPPED:
            started_s = seen.started_at.timestamp()
            if not holder_is_dead(
                seen,
                now=self._store.now(),
                host=self._host,
                pid_alive=lambda pid: process_alive(pid, started_s),
                policy=self._liveness,
            ):
                raise _host_taken(seen)
        joined = self._store.orchestrators.join_orchestrators(
            pid=self._pid, host=self._host, seen=seen
        )
        if joined is None:
            raise _host_taken(seen)
        self._member = joined

    @property
    def leading(self) -> bool:
        """Whether this member leads now (and so notifies: notify.py)."""
        return self._role is Role.LEADER

    def start(self) -> None:
        """Lead at once if the lock is free."""
        self._try_lead()

    def on_interval(self) -> None:
        """A leader that still holds the lock reconciles; a standby tries to lead, and
        cleans up what its host's dead workers left while it does not."""
        if self._role is Role.LEADER and not self._lock.try_acquire():  # asked on its session
            self._step_down("leader lock lost")
        if self._role is Role.LEADER:
            self._upkeep.reconcile()
            return
        self._try_lead()
        if self._role is Role.STANDBY:
            self._upkeep.clean_up()

    def on_stopping_interval(self) -> None:
        """A leader reconciles still: other hosts' dead workers must not wait for its drain."""
        if self._role is Role.LEADER:
            self._upkeep.reconcile()

    def beat(self, slots: list[dict[str, Any]], *, reconciled: bool, stopping: bool) -> bool:
        """Beat the state row while leading (taken by another: stand by) and the member
        row; False once the member row is not ours."""
        if self._role is Role.LEADER and not self._row.beat(slots, reconciled=reconciled):
            self._step_down("state row taken by another leader")
        status = OrchestratorStatus.STOPPING if stopping else OrchestratorStatus.RUNNING
        return self._beat_member(status)

    def stop(self, grace_s: float) -> float:
        """A leader marks the state row stopping; the grace (the row may shorten it)."""
        return self._row.stop(grace_s) if self._role is Role.LEADER else grace_s

    def leave(self, *, stopped: bool) -> None:
        """State row stopped (a leader whose pool stopped in order), member row stopped,
        lock released."""
        try:
            if stopped and self._role is Role.LEADER:
                stopping = frozenset({OrchestratorStatus.STOPPING})
                self._row.move(OrchestratorStatus.STOPPED, stopping)
            self._beat_member(OrchestratorStatus.STOPPED)
        finally:  # the store out or not, the lock goes
            self._role = Role.STANDBY
            self._lock.release()

    def _try_lead(self) -> None:
        """A standby's try: the lock, then the state row; then it leads.

        A store out (StoreError, the orchestrator's to note) leaves it a standby: the lock
        is re-entrant and the row its own, so the next try, once the store is back, leads.
        """
        # A row that changed since it was read keeps the lock: the next interval retries.
        if not self._lock.try_acquire() or self._row.take_unchanged() is None:
            return
        self._row.lead(self._upkeep)
        self._role = Role.LEADER
        event(self._log, "orchestrator.leading", pid=self._pid, host=self._host)

    def _step_down(self, why: str) -> None:
        """Leader no more (the lock or the row went to another): stand by."""
        self._role = Role.STANDBY
        self._lock.release()
        event(self._log, "orchestrator.standing_by", logging.WARNING, pid=self._pid, reason=why)

    def _beat_member(self, to: OrchestratorStatus) -> bool:
        assert self._member is not None, "take() joined first"
        return self._store.orchestrators.beat_member(self._member, role=self._role, to=to)


def _host_taken(seen: OrchestratorMember | None) -> Refused:
    what = f"pid {seen.pid}" if seen else "another orchestrator"
    host = seen.host if seen else "this host"
    return Refused(
        f"an orchestrator already runs on this store as host {host} ({what}); "
        "stop it first, or give this one another --hostname"
    )
