"""The store's orchestrator state row, as the orchestrator that holds it takes, moves, beats it.

The row means "the orchestrator that reconciles": on SQLite the store's one orchestrator,
on PostgreSQL the leader (leadership.py). Every change is a compare-and-set in the store,
so two orchestrators never both believe they hold it.

    take (SQLite) ─ a live holder refuses us (AlreadyRunning); a dead one (no beat within
        the liveness window, or its process gone from this host) is replaced ─► starting
    take_unchanged (PostgreSQL, once the leader lock is ours: the lock proves the old
        leader's session ended) ─ taken if it is still what was read ─► starting
    lead ─ a reconcile pass at once ─► running
    beat ─ the holder lives, its pool's slots, whether a pass ran; False once another took it
    stop ─► stopping (the grace its tasks get, shortened by `orchestrator stop --timeout`)
    move(stopped) once the pool has stopped
"""

from __future__ import annotations

import logging
from typing import Any

from corral.foundation.errors import Refused
from corral.foundation.logs import event
from corral.foundation.policies import LivenessPolicy
from corral.foundation.process_keys import ORCHESTRATOR_KEY_ENV, own_key_hash
from corral.foundation.processes import process_alive
from corral.model.orchestrators import (
    STOPPABLE,
    OrchestratorState,
    OrchestratorStatus,
    holder_is_dead,
)
from corral.runtime.pool.upkeep import Upkeep
from corral.store import Store


class AlreadyRunning(Refused):
    """Another orchestrator holds this store."""


class StateRow:
    """The state row, for the orchestrator `pid` on `host` that holds or takes it."""

    def __init__(
        self,
        store: Store,
        *,
        pid: int,
        host: str,
        config: dict[str, Any],
        liveness: LivenessPolicy,
        log: logging.Logger,
    ) -> None:
        self._store, self._pid, self._host = store, pid, host
        self._config, self._liveness, self._log = config, liveness, log

    def take(self) -> OrchestratorState:
        """Take the row, replacing a dead holder; AlreadyRunning if a live one has it."""
        seen = self._store.orchestrators.get_orchestrator()
        if seen.status is not OrchestratorStatus.STOPPED and not holder_is_dead(
            seen,
            now=self._store.now(),
            host=self._host,
            pid_alive=lambda pid: _holder_alive(pid, seen),
            policy=self._liveness,
        ):
            raise _already_running(seen)
        taken = self._store.orchestrators.acquire_orchestrator(
            pid=self._pid,
            host=self._host,
            config=self._config,
            seen=seen,
            key_hash=own_key_hash(ORCHESTRATOR_KEY_ENV),
        )
        if taken is None:
            raise _already_running(self._store.orchestrators.get_orchestrator())
        if seen.status is not OrchestratorStatus.STOPPED:
            event(self._log, "orchestrator.took_over", previous_pid=seen.pid, host=seen.host)
        return taken

    def take_unchanged(self) -> OrchestratorState | None:
        """Take the row if it is still what is read now; None if it changed meanwhile."""
        seen = self._store.orchestrators.get_orchestrator()
        return self._store.orchestrators.acquire_orchestrator(
            pid=self._pid,
            host=self._host,
            config=self._config,
            seen=seen,
            key_hash=own_key_hash(ORCHESTRATOR_KEY_ENV),
        )

    def lead(self, upkeep: Upkeep) -> None:
        """Now holding the row (status starting): a pass at once, then running."""
        upkeep.reconcile()
        self.move(OrchestratorStatus.RUNNING, frozenset({OrchestratorStatus.STARTING}))

    def move(self, to: OrchestratorStatus, allowed: frozenset[str]) -> None:
        """Move the row to `to` from one of `allowed`; Refused if it is not ours."""
        self._store.orchestrators.set_orchestrator_status(
            pid=self._pid, host=self._host, to=to, allowed=allowed
        )
        event(self._log, f"orchestrator.{to}", pid=self._pid)

    def beat(self, slots: list[dict[str, Any]], *, reconciled: bool) -> bool:
        """Record that the holder lives, its pool and a pass; False once the row is not ours."""
        return self._store.orchestrators.beat_orchestrator(
            pid=self._pid, host=self._host, slots=slots, reconciled=reconciled
        )

    def stop(self, grace_s: float) -> float:
        """Mark the row stopping; the grace running tasks get (`orchestrator stop --timeout`
        may have set a shorter one)."""
        state = self._store.orchestrators.get_orchestrator()
        if state.status is not OrchestratorStatus.STOPPING:
            self.move(OrchestratorStatus.STOPPING, STOPPABLE)
        if state.stop_timeout_s is not None:
            return min(grace_s, state.stop_timeout_s)
        return grace_s


def _holder_alive(pid: int, seen: OrchestratorState) -> bool:
    """Whether `pid` still runs and is the process that took the row (not a reused pid)."""
    started_s = seen.started_at.timestamp() if seen.started_at else 0.0
    return process_alive(pid, started_s)


def _already_running(state: OrchestratorState) -> AlreadyRunning:
    return AlreadyRunning(
        f"an orchestrator is already {state.status} on this store "
        f"(pid {state.pid} on {state.host}); stop it first: corral orchestrator stop"
    )
