"""The orchestrator's task lines: one line when its pool starts a task, one when it ends.

    2026-11-26 09:00:01  slot-1  t-3kq8v0x2mz  started             Fix the parser
    2026-11-26 09:00:09  slot-1  t-3kq8v0x2mz  done       8s       Fix the parser
    2026-11-26 09:00:12  slot-2  t-a81md0c4ke  retrying   3s       Flaky test  (exit status 1)

A thread follows the event log (corral.runtime.follow) for the events that start a run
(`task.claimed`) and end one, and prints a line for each of the pool's own workers: the
slot comes from `slot_of` (the pool's state), the title from the task (escaped and
shortened: it is users' data), the reason of a run that did not succeed from its event
(a land conflict names its files there), the duration from the claim's time to the end's, both on
the store's clock. The lifecycle lines stay on stderr; these go to `out` (stdout, or the
daemon's log) one whole line at a time.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TextIO

from corral.foundation.clock import SystemClock
from corral.foundation.durations import format_duration
from corral.foundation.errors import CorralError
from corral.foundation.logs import event as log_event
from corral.foundation.printable import one_line
from corral.foundation.threads import ThreadService
from corral.model.events import Event, EventFilter
from corral.runtime.follow import Follower
from corral.store import Store

STARTED = "task.claimed"
# The events that end a run, and the outcome each line shows.
OUTCOMES = {
    "task.completed": "done",  # or in_review, as its to_status says
    "task.submitted": "in_review",
    "task.failed": "failed",
    "task.retry_scheduled": "retrying",
    "task.released": "released",
    "task.deferred": "deferred",
    "task.waiting": "waiting",  # for a person: the reason follows the title
    "task.cancelled": "cancelled",
}
TITLE_WIDTH = 60
REASON_WIDTH = 80
# Lines for people, who do not see 200 ms: polled on both stores, so that a running
# orchestrator does not make every commit on PostgreSQL notify (runtime/follow.py).
POLL_S = 0.2


@dataclass(frozen=True, slots=True)
class _Started:
    slot: str
    at: datetime
    title: str


class TaskLines(ThreadService):
    """A daemon thread printing the pool's task lines to `out` from now on (started here)."""

    def __init__(
        self,
        store: Store,
        *,
        slot_of: Callable[[str], str | None],
        out: TextIO,
        log: logging.Logger,
    ) -> None:
        super().__init__("corral-task-lines")
        self._store, self._slot_of, self._out, self._log = store, slot_of, out, log
        self._running: dict[str, _Started] = {}
        flt = EventFilter(names=(STARTED, *OUTCOMES), limit=0)  # none from before now
        self._follower = Follower(
            store, flt, clock=SystemClock(), on_outage=self._outage, poll_s=POLL_S, listen=False
        )
        self._follower.begin()  # a task started once this returns gets its line
        self.start()

    def _run(self) -> None:
        self._follower.run(self._on_event)

    def _interrupt(self) -> None:
        self._follower.stop(catch_up=True)  # the lines of the pool's last tasks too

    def _on_event(self, event: Event) -> None:
        if event.task_id is None:
            return
        if event.name == STARTED:
            self._started(event, event.task_id)
        else:
            self._ended(event, event.task_id)

    def _started(self, event: Event, task_id: str) -> None:
        slot = self._slot_of(event.worker_id) if event.worker_id else None
        if slot is None:
            return  # not a worker of this pool
        started = _Started(slot=slot, at=event.at, title=self._title(task_id))
        self._running[task_id] = started
        self._line(event, slot, "started", took="", title=started.title)

    def _ended(self, event: Event, task_id: str) -> None:
        started = self._running.pop(task_id, None)
        slot = started.slot if started else self._slot_of(event.worker_id or "")
        if slot is None:
            return
        outcome = event.to_status if event.name == "task.completed" else OUTCOMES[event.name]
        took = format_duration((event.at - started.at).total_seconds()) if started else "-"
        title = started.title if started else self._title(task_id)
        if event.reason and event.name != "task.completed":
            title += f"  ({one_line(event.reason, REASON_WIDTH)})"
        self._line(event, slot, str(outcome), took=took, title=title)

    def _title(self, task_id: str) -> str:
        try:
            return one_line(self._store.tasks.get_task(task_id).title, TITLE_WIDTH)
        except CorralError:
            return "?"

    def _line(self, event: Event, slot: str, what: str, *, took: str, title: str) -> None:
        stamp = event.at.strftime("%Y-%m-%d %H:%M:%S")
        self._out.write(f"{stamp}  {slot}  {event.task_id}  {what:9}  {took:7}  {title}\n")
        self._out.flush()

    def _outage(self, message: str) -> None:
        log_event(self._log, "task_lines.store", logging.WARNING, message=message)
