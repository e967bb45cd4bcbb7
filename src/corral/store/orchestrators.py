"""Store operations on the orchestrator's state row (take, move, beat, read) and on the
member rows of several orchestrators (join, beat, list; PostgreSQL).

Every change is one compare-and-set on the row's holder (pid and host, and for a member
its start time) and its status; the caller learns from the answer whether it still holds
the row. Taking the state row also demotes any other member still marked leader.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from corral.foundation import errors
from corral.store import journal
from corral.store.driver import Driver, Json, Row, Tx
from corral.store.operations import OPERATOR, VIEWER, Repository, served

if TYPE_CHECKING:  # imported where used: every CLI command imports the store, few the row
    from corral.model.orchestrators import (
        OrchestratorMember,
        OrchestratorState,
        OrchestratorStatus,
        Role,
    )

ACTOR = "orchestrator"


class Orchestrators(Repository):
    """The singleton row of the store's orchestrator."""

    NAME = "orchestrators"

    @served(VIEWER)
    def get_orchestrator(self) -> OrchestratorState:
        """The row as it is now."""
        with self._driver.read() as tx:
            return _state(self._driver, _row(tx))

    @served(OPERATOR)
    def acquire_orchestrator(
        self,
        *,
        pid: int,
        host: str,
        config: dict[str, Any],
        seen: OrchestratorState,
        key_hash: str | None = None,
    ) -> OrchestratorState | None:
        """Take the row if it is stopped or still exactly `seen` (a holder judged dead),
        recording `key_hash`, the hash of the key the taker was started with.

        None when another orchestrator holds it (or took it since `seen` was read).
        """
        from corral.model.workers import check_key_hash

        check_key_hash("key_hash", key_hash)
        with self._driver.write() as tx:
            row = tx.one(
                "acquire_orchestrator",
                pid=pid,
                host=host,
                config=Json(config),
                seen_pid=seen.pid,
                seen_host=seen.host,
                seen_started_at=seen.started_at,
                seen_heartbeat_at=seen.heartbeat_at,
            )
            if row is None:
                return None
            # The key of the one that took it; a previous holder's is gone with it.
            row = tx.one("set_orchestrator_key", key_hash=key_hash)
            from corral.model.orchestrators import OrchestratorStatus

            tx.run("demote_orchestrators", host=host)  # PostgreSQL: one leader among members
            reason = None if seen.status is OrchestratorStatus.STOPPED else "previous holder died"
            journal.record(
                tx,
                "orchestrator.started",
                actor=ACTOR,
                from_status=seen.status,
                to_status=OrchestratorStatus.STARTING,
                reason=reason,
                data={"pid": pid, "host": host, "previous_pid": seen.pid},
            )
            return _state(self._driver, row)

    @served(OPERATOR)
    def set_orchestrator_status(
        self, *, pid: int, host: str, to: OrchestratorStatus, allowed: frozenset[str]
    ) -> OrchestratorState:
        """Move the row held by (pid, host) to `to`; Refused if it is not held so."""
        with self._driver.write() as tx:
            row = tx.one(
                "set_orchestrator_status",
                pid=pid,
                host=host,
                to_status=to,
                allowed=sorted(allowed),
            )
            if row is None:
                current = _state(self._driver, _row(tx))
                raise errors.Refused(
                    f"orchestrator row is {current.status} under pid {current.pid} on "
                    f"{current.host}, not held by pid {pid} on {host}"
                )
            journal.record(tx, f"orchestrator.{to}", actor=ACTOR, to_status=to, data={"pid": pid})
            return _state(self._driver, row)

    @served(OPERATOR, frees_work=False)
    def beat_orchestrator(
        self, *, pid: int, host: str, slots: list[dict[str, Any]], reconciled: bool
    ) -> bool:
        """Record that the holder lives, its pool, and a reconcile pass; False if not the holder."""
        with self._driver.write() as tx:
            return bool(
                tx.run(
                    "beat_orchestrator",
                    pid=pid,
                    host=host,
                    slots=Json(slots),
                    reconciled=reconciled,
                )
            )

    @served(OPERATOR)
    def request_orchestrator_stop(self, *, stop_timeout_s: float) -> OrchestratorState:
        """Mark the live orchestrator stopping, with how long its workers may finish tasks."""
        from corral.model.orchestrators import STOPPABLE, OrchestratorStatus

        with self._driver.write() as tx:
            row = tx.one(
                "request_orchestrator_stop",
                stop_timeout_s=stop_timeout_s,
                allowed=sorted(STOPPABLE | {OrchestratorStatus.STOPPING}),
            )
            if row is None:
                current = _state(self._driver, _row(tx))
                raise errors.Refused(f"no orchestrator is running (it is {current.status})")
            journal.record(
                tx,
                "orchestrator.stop_requested",
                actor="operator",
                to_status=OrchestratorStatus.STOPPING,
                data={"pid": row["pid"], "stop_timeout_s": stop_timeout_s},
            )
            return _state(self._driver, row)

    @served(VIEWER)
    def list_orchestrators(self) -> list[OrchestratorMember]:
        """Every member row, stopped ones too, by host."""
        with self._driver.read() as tx:
            return [_member(self._driver, row) for row in tx.all("list_orchestrators")]

    @served(OPERATOR)
    def join_orchestrators(
        self, *, pid: int, host: str, seen: OrchestratorMember | None
    ) -> OrchestratorMember | None:
        """Take `host`'s member row as a standby: new, stopped, or still exactly `seen` (a
        holder judged dead). None when a live orchestrator holds it (or took it since)."""
        with self._driver.write() as tx:
            row = tx.one(
                "join_orchestrators",
                pid=pid,
                host=host,
                seen_pid=seen.pid if seen else None,
                seen_started_at=seen.started_at if seen else None,
                seen_heartbeat_at=seen.heartbeat_at if seen else None,
            )
            if row is None:
                return None
            from corral.model.orchestrators import OrchestratorStatus

            journal.record(
                tx,
                "orchestrator.joined",
                actor=ACTOR,
                to_status=OrchestratorStatus.RUNNING,
                data={"pid": pid, "host": host, "previous_pid": seen.pid if seen else None},
            )
            return _member(self._driver, row)

    @served(OPERATOR, frees_work=False)
    def beat_member(
        self, member: OrchestratorMember, *, role: Role, to: OrchestratorStatus
    ) -> bool:
        """Record that `member` lives, in `role` and status `to`; False if it is not its row."""
        with self._driver.write() as tx:
            return bool(
                tx.run(
                    "beat_orchestrators",
                    host=member.host,
                    pid=member.pid,
                    started_at=member.started_at,
                    role=role,
                    to_status=to,
                )
            )


def _row(tx: Tx) -> Row:
    row = tx.one("get_orchestrator")
    if row is None:  # the migration inserts it; only a hand-edited database lacks it
        raise errors.StoreError("the orchestrator row is missing: the database was edited")
    return row


def _state(driver: Driver, row: Row) -> OrchestratorState:
    from corral.model.orchestrators import OrchestratorState, OrchestratorStatus

    def instant(name: str) -> Any:
        return None if row[name] is None else driver.instant(row[name])

    return OrchestratorState(
        status=OrchestratorStatus(row["status"]),
        pid=row["pid"],
        host=row["host"],
        started_at=instant("started_at"),
        heartbeat_at=instant("heartbeat_at"),
        last_reconcile_at=instant("last_reconcile_at"),
        stopped_at=instant("stopped_at"),
        stop_timeout_s=row["stop_timeout_s"],
        config=driver.json(row["config"]),
        slots=driver.json(row["slots"]),
        key_hash=row["key_hash"],
    )


def _member(driver: Driver, row: Row) -> OrchestratorMember:
    from corral.model.orchestrators import OrchestratorMember, OrchestratorStatus, Role

    return OrchestratorMember(
        host=row["host"],
        pid=row["pid"],
        role=Role(row["role"]),
        status=OrchestratorStatus(row["status"]),
        started_at=driver.instant(row["started_at"]),
        heartbeat_at=driver.instant(row["heartbeat_at"]),
        stopped_at=None if row["stopped_at"] is None else driver.instant(row["stopped_at"]),
    )
