"""Reading tallies of the event log: what /metrics counts in a stretch of it.

The stretch is a follower's (store/events.py): from a cursor to the horizon, the log's
settled prefix, so a reader that goes on from the cursor returned counts every event once,
on PostgreSQL too, where an event may commit after one with a higher id. The database
groups and sums (queries.sql, event_tallies), so a first read of a long log sends back a
few rows, not the log.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.store.events import event_horizon, stretch
from corral.store.operations import VIEWER, Repository, served
from corral.store.recovery import ACTOR as RECONCILER

if TYPE_CHECKING:
    from corral.model.event_cursors import EventCursor
    from corral.model.tallies import TallyRow


class Tallies(Repository):
    """Count a stretch of the event log."""

    NAME = "tallies"

    @served(VIEWER)
    def event_tallies(self, after: EventCursor | None) -> tuple[list[TallyRow], EventCursor]:
        """The tallies of the events after `after` (None: from the start) that have
        settled, and the cursor to count from next."""
        from corral.model.event_cursors import EventCursor  # noqa: PLC0415 - /metrics alone
        from corral.model.tallies import REPAIRS, RUN_BOUNDS_S, WAIT_BOUNDS_S, TallyRow  # noqa: PLC0415

        start = after or EventCursor(0, 0)
        with self._driver.read() as tx:
            horizon, _ = event_horizon(tx)
            found = tx.all(
                "event_tallies",
                **stretch(start, horizon),
                actor=RECONCILER,
                repairs=list(REPAIRS),
                wait_bounds=[float(b) for b in WAIT_BOUNDS_S],
                run_bounds=[float(b) for b in RUN_BOUNDS_S],
            )
        tallies = [
            TallyRow(
                name=r["name"],
                queue=r["queue"],
                kind=r["kind"],
                bucket=None if r["bucket"] is None else int(r["bucket"]),
                n=int(r["n"]),
                micros=int(r["micros"]),
            )
            for r in found
        ]
        return tallies, max(start, horizon)
