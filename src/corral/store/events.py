"""Reading the event log: the newest events, and pages after a follower's cursor.

A follower (`corral events --follow`) must never miss or repeat an event. On SQLite,
writers take turns, so events become visible in id order and a follower tails them by id.
On PostgreSQL an id is drawn at insert, not at commit: a transaction holding id 10 can
commit after one holding id 11, and a reader tailing `id > last` would skip 10 for good.
So each event records its transaction's id (`xid`), and a read stops at its horizon,
the oldest transaction of this database still running in its snapshot (queries.sql,
event_horizon): below it every transaction has ended, its events are all visible and
none can be added. Read in (xid, id) order from a cursor of (xid, id), the log's settled
prefix only grows, so each page continues where the last ended (docs/state-machines.md,
Following events).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from corral.foundation.documents import MAX_INT64
from corral.store import journal, rows
from corral.store.driver import Tx
from corral.store.operations import OPERATOR, VIEWER, Repository, served

if TYPE_CHECKING:
    from corral.model.event_cursors import EventCursor, EventPage
    from corral.model.events import Event, EventFilter


class Events(Repository):
    """List the event log, page through it from a cursor, and wait for it to grow."""

    NAME = "events"

    @served(VIEWER)
    def list_events(self, flt: EventFilter) -> list[Event]:
        """The newest `flt.limit` events matching `flt`, oldest first."""
        with self._driver.read() as tx:
            found = tx.all(
                "list_events",
                **_filter(flt),
                after_id=flt.after_id,
                before_xid=None,
                before_id=MAX_INT64 if flt.before_id is None else flt.before_id,
            )
            return [rows.event(self._driver, r) for r in reversed(found)]

    @served(VIEWER)
    def count_events(self, flt: EventFilter) -> int:
        """How many events match `flt`'s task, worker, names and since (its bounds aside)."""
        with self._driver.read() as tx:
            row = tx.one("count_events", **_filter(flt))
            return int(row["n"]) if row else 0

    def events_around(
        self, flt: EventFilter, *, older_than: int | None = None, newer_than: int | None = None
    ) -> list[Event]:
        """A page of the events matching `flt` by id, newest first: the newest `flt.limit`
        below id `older_than`, or the oldest `flt.limit` above id `newer_than` (the
        dashboard's events page, older and newer; a follower wants `events_page`)."""
        with self._driver.read() as tx:
            if newer_than is not None:
                found = tx.all("events_newer", **_filter(flt), after_id=newer_than)
                found.reverse()
            else:
                older = (1 << 62) if older_than is None else older_than
                found = tx.all("events_older", **_filter(flt), before_id=older)
            return [rows.event(self._driver, r) for r in found]

    @served(VIEWER)
    def events_page(self, flt: EventFilter, after: EventCursor | None) -> EventPage:
        """The events matching `flt` after cursor `after`, at most `flt.limit`, in cursor
        order, and the cursor to read from next. Without `after`: the newest `flt.limit`
        events settled now (in cursor order), and the cursor past everything settled."""
        with self._driver.read() as tx:
            horizon, pending = event_horizon(tx)
            if after is None:
                settled = str(horizon.xid)
                found = tx.all(
                    "list_events",
                    **_filter(flt),
                    after_id=0,
                    before_xid=settled,
                    before_id=MAX_INT64,
                )
                # The newest by id, put in cursor order: on PostgreSQL a lower id may have
                # committed later, and a reader resuming after one of them must not skip it.
                found.sort(key=_cursor_of)
                return self._page(found, cursor=horizon, pending=pending)
            found = tx.all("events_after", **_filter(flt), **stretch(after, horizon))
        if len(found) == flt.limit:  # more may follow: go on from the last one read
            return self._page(found, cursor=_cursor_of(found[-1]), pending=True)
        return self._page(found, cursor=max(after, horizon), pending=pending)

    def _page(self, found: list[Any], *, cursor: EventCursor, pending: bool) -> EventPage:
        from corral.model.event_cursors import EventPage  # noqa: PLC0415 - followers alone need it

        return EventPage(
            events=[rows.event(self._driver, r) for r in found],
            cursor=cursor,
            cursors=tuple(map(_cursor_of, found)),
            pending=pending,
        )

    @served(VIEWER)
    def events_head(self) -> EventCursor:
        """The cursor past every event settled now: one cheap read that tells a reader of
        many streams whether a page may hold anything new (on PostgreSQL it also moves as
        other transactions end)."""
        with self._driver.read() as tx:
            return event_horizon(tx)[0]

    @served(OPERATOR, frees_work=False)
    def record_delivery(
        self,
        *,
        delivered: bool,
        notice: str,
        event_id: int,
        channel: str,
        attempts: int,
        task_id: str | None,
        worker_id: str | None,
        error: str | None,
        actor: str,
    ) -> None:
        """Record that a notice went out (`notify.delivered`) or never will
        (`notify.gave_up`, its last `error`): about event `event_id`'s task or worker, so
        in its namespace and its history (runtime/pool/deliveries.py). An id not of the
        handle's namespace is not named: an event's namespace is its task's or its worker's,
        so naming another's would write into that namespace's history."""
        with self._driver.write() as tx:
            if task_id is not None and tx.one("get_task", task_id=task_id) is None:
                task_id = None
            if worker_id is not None and tx.one("get_worker", worker_id=worker_id) is None:
                worker_id = None
            journal.record(
                tx,
                "notify.delivered" if delivered else "notify.gave_up",
                actor=actor,
                task_id=task_id,
                worker_id=worker_id,
                reason=error,
                data={
                    "notice": notice,
                    "event_id": event_id,
                    "channel": channel,
                    "attempts": attempts,
                },
            )

    def wake_on_events(self, wake: threading.Event) -> Callable[[], None] | None:
        """Set `wake` whenever events are committed (PostgreSQL's NOTIFY); the function
        that stops listening, or None where the store cannot tell (SQLite: poll)."""
        return self._driver.wake_on_events(wake)


def _filter(flt: EventFilter) -> dict[str, Any]:
    return {
        "task_id": flt.task_id,
        "worker_id": flt.worker_id,
        "names": list(flt.names) or None,  # an empty list would match nothing
        "since_at": flt.since_at,
        "limit": flt.limit,
    }


def stretch(after: EventCursor, horizon: EventCursor) -> dict[str, Any]:
    """The parameters of a read of the log after cursor `after` up to `horizon`."""
    return {
        "after_xid": str(after.xid),
        "after_id": after.id,
        "horizon_xid": str(horizon.xid),
        "horizon_id": horizon.id,
    }


def event_horizon(tx: Tx) -> tuple[EventCursor, bool]:
    """The cursor past every settled event, and whether committed events wait beyond it."""
    row = tx.one("event_horizon")
    assert row is not None  # one row, always
    return _cursor(row["xid"], row["id"]), bool(row["pending"])


def _cursor_of(row: Any) -> EventCursor:
    return _cursor(row["cursor_xid"], row["id"])


def _cursor(xid: Any, event_id: Any) -> EventCursor:
    from corral.model.event_cursors import EventCursor  # noqa: PLC0415 - followers alone need it

    return EventCursor(int(xid), int(event_id))
