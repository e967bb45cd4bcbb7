"""An orchestrator's role among the orchestrators of its store, as one object.

Every orchestrator runs its own pool. What differs is who reconciles, which rows each
beats, and what happens at each interval:

    SoleHolder (SQLite: the store has no leader lock) ─ the store's one orchestrator. It
        takes the state row at start (refused while a live one holds it), reconciles every
        interval, and beats the row; losing the row (a newer orchestrator judged it dead
        and adopts its workers) ends it.
    Member (PostgreSQL: leadership.py) ─ one of several, one per host, each with a member
        row. The one holding the leader lock leads: it holds the state row and
        reconciles, as a sole holder does. The others stand by: they try the lock every
        interval, and clean up their own host meanwhile. A leader that loses the lock or
        the row stands by; losing its member row ends it.

What the orchestrator asks of its role, in order (any of them may raise StoreError: the
orchestrator notes the outage and asks again at the next interval or beat):

    take ─► start (the pool is up: lead now if it may) ─► on_interval (every reconcile
    interval) and beat (every heartbeat interval, and after a change) ─► stop (the pool
    drains: on_stopping_interval, beat) ─► leave
"""

from __future__ import annotations

from typing import Any, Protocol

from corral.model.orchestrators import OrchestratorStatus
from corral.runtime.pool.state_row import StateRow
from corral.runtime.pool.upkeep import Upkeep


class OrchestratorRole(Protocol):
    """What an orchestrator is among its store's orchestrators (module docstring)."""

    @property
    def leading(self) -> bool:
        """Whether this orchestrator is the one that notifies (and reconciles) now."""
        ...

    def take(self) -> None:
        """Take this orchestrator's place in the store; Refused if a live one holds it."""
        ...

    def start(self) -> None:
        """The pool has started: lead at once if this role may."""
        ...

    def on_interval(self) -> None:
        """Each reconcile interval while running."""
        ...

    def on_stopping_interval(self) -> None:
        """Each reconcile interval while the pool drains."""
        ...

    def beat(self, slots: list[dict[str, Any]], *, reconciled: bool, stopping: bool) -> bool:
        """Beat the rows this role holds; False once one that makes it what it is was taken."""
        ...

    def stop(self, grace_s: float) -> float:
        """The pool starts to drain: say so; the grace its tasks get."""
        ...

    def leave(self, *, stopped: bool) -> None:
        """The pool is gone (`stopped`: in order, not because a row was lost): give up
        what this role holds."""
        ...


class SoleHolder:
    """SQLite: the store's one orchestrator, holding the state row from start to stop."""

    def __init__(self, row: StateRow, upkeep: Upkeep) -> None:
        self._row, self._upkeep = row, upkeep
        self._running = False  # the row moved to running (a pass at once came first)

    leading = True  # the one orchestrator of a SQLite store notifies (notify.py)

    def take(self) -> None:
        """Take the state row (AlreadyRunning while a live orchestrator holds it)."""
        self._row.take()

    def start(self) -> None:
        """A pass at once, then running."""
        self._row.lead(self._upkeep)
        self._running = True

    def on_interval(self) -> None:
        """Reconcile (and, if the store was out at start, move the row to running)."""
        if not self._running:
            self.start()
            return
        self._upkeep.reconcile()

    def on_stopping_interval(self) -> None:
        """Reconcile still: other hosts' and bash loops' dead workers must not wait."""
        self._upkeep.reconcile()

    def beat(self, slots: list[dict[str, Any]], *, reconciled: bool, stopping: bool) -> bool:
        """Beat the state row; False once a newer orchestrator took it."""
        return self._row.beat(slots, reconciled=reconciled)

    def stop(self, grace_s: float) -> float:
        """Mark the row stopping; the grace (`orchestrator stop --timeout` may shorten it)."""
        return self._row.stop(grace_s)

    def leave(self, *, stopped: bool) -> None:
        """Mark the row stopped, if the pool stopped in order (else it is another's now)."""
        if stopped:
            self._row.move(OrchestratorStatus.STOPPED, frozenset({OrchestratorStatus.STOPPING}))
