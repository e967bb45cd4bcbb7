"""A channel's delivery queue: each notice sent on the channel, retried with backoff,
recorded once it went out or never will.

    Notifier (follows the log) ─► put(notice, event, channel) ─► the channel's queue, by
      due time ─► its delivery thread sends the due one ─► taken: `notify.delivered`
                                               ─► refused, down, timed out: due again
                                                  after the next wait of `backoff_s`
                                               ─► no wait left: `notify.gave_up`

The follower only puts: a channel that is down (a webhook that refuses, a command that
hangs) never holds up reading the log, and while one delivery waits for its retry the
later ones still go out. Each channel has a queue and a thread of its own, so a slow one
(a command taking seconds, a webhook up to its timeout) never delays another's notices
past the five seconds a notice is promised in. The queue is bounded (MAX_PENDING): past it
a notice is given up at once rather than kept without end for an endpoint that never
answers. Each delivery is recorded as one event naming the notice, the event it is about
and the channel (never the channel's URL or its secrets); a store that is away loses the
record, not the delivery.
Deliveries still queued when the orchestrator stops are dropped (their events are in the
log); one under way is finished first, so a stop waits for it, at most a command's or a
webhook's timeout.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
from dataclasses import dataclass, field
from typing import Protocol

from corral.foundation.clock import Clock, SystemClock
from corral.foundation.errors import StoreError
from corral.foundation.logs import event
from corral.foundation.threads import ThreadService
from corral.model.events import Event
from corral.store import Store

# The waits before each retry: the first try and six more over about four minutes, so an
# endpoint restarting (or a laptop waking) still gets its notices, and one that is gone is
# given up on before its notices are stale.
BACKOFF_S = (1.0, 2.0, 5.0, 15.0, 60.0, 180.0)
MAX_PENDING = 1000  # waiting at once on a channel (notices are rare: this is an endpoint gone)
IDLE_WAIT_S = 3600.0  # nothing queued: a put or a stop wakes the thread before this
ACTOR = "notify"


class Channel(Protocol):
    """Where a notice goes: `[notify] command`, `url` or `ntfy`."""

    name: str  # "command", "url", "ntfy": what the delivery event names
    shown: str  # what the log names it by: never a URL's secret, nor the command's arguments

    def send(self, notice: str, ev: Event) -> str | None:
        """Deliver one notice of `ev`; None once taken, else why not (no secret in it)."""


@dataclass(order=True)
class Delivery:
    """One notice on one channel, due at `due` (the clock's monotonic seconds)."""

    due: float
    seq: int  # the order put, among deliveries due at once
    notice: str = field(compare=False)
    event: Event = field(compare=False)
    channel: Channel = field(compare=False)
    attempts: int = field(default=0, compare=False)


class Deliveries(ThreadService):
    """A daemon thread sending one channel's queued deliveries, one at a time, due first."""

    def __init__(
        self,
        store: Store,
        *,
        log: logging.Logger,
        backoff_s: tuple[float, ...] = BACKOFF_S,
        max_pending: int = MAX_PENDING,
        clock: Clock | None = None,
    ) -> None:
        super().__init__("corral-notify-send")
        self._store, self._log = store, log
        self._backoff_s, self._max_pending = backoff_s, max_pending
        self._clock: Clock = clock or SystemClock()
        self._queue: list[Delivery] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._seq = itertools.count()
        self.start()

    def put(self, notice: str, ev: Event, channel: Channel) -> None:
        """Queue `notice` of `ev` for `channel`, due now; given up at once when full."""
        with self._lock:
            full = len(self._queue) >= self._max_pending
            if not full:
                due = self._clock.monotonic()
                heapq.heappush(self._queue, Delivery(due, next(self._seq), notice, ev, channel))
        if full:
            self._gave_up(Delivery(0.0, 0, notice, ev, channel), "too many notices waiting")
            return
        self._wake.set()

    def pending(self) -> int:
        """How many deliveries wait (for a try or a retry)."""
        with self._lock:
            return len(self._queue)

    def _interrupt(self) -> None:
        self._wake.set()

    def _run(self) -> None:
        while not self.stopping.is_set():
            self._wake.clear()  # before looking: a put after the look wakes the wait
            with self._lock:
                wait_s = self._queue[0].due - self._clock.monotonic() if self._queue else None
                due = heapq.heappop(self._queue) if wait_s is not None and wait_s <= 0 else None
            if due is None:
                self._clock.wait(self._wake, IDLE_WAIT_S if wait_s is None else wait_s)
                continue
            self._attempt(due)

    def _attempt(self, delivery: Delivery) -> None:
        error = delivery.channel.send(delivery.notice, delivery.event)
        delivery.attempts += 1
        channel, ev = delivery.channel, delivery.event
        if error is None:
            event(self._log, "notify.sent", notice=delivery.notice, event_id=ev.id,
                  task_id=ev.task_id, channel=channel.name, to=channel.shown,
                  attempts=delivery.attempts)  # fmt: skip
            self._record(delivery, None)
            return
        if delivery.attempts > len(self._backoff_s):
            self._gave_up(delivery, error)
            return
        retry_s = self._backoff_s[delivery.attempts - 1]
        event(self._log, "notify.failed", logging.WARNING, notice=delivery.notice,
              event_id=ev.id, channel=channel.name, to=channel.shown, error=error,
              retry_in_s=retry_s)  # fmt: skip
        with self._lock:
            delivery.due = self._clock.monotonic() + retry_s
            heapq.heappush(self._queue, delivery)

    def _gave_up(self, delivery: Delivery, error: str) -> None:
        channel = delivery.channel
        event(self._log, "notify.gave_up", logging.WARNING, notice=delivery.notice,
              event_id=delivery.event.id, channel=channel.name, to=channel.shown,
              attempts=delivery.attempts, error=error)  # fmt: skip
        self._record(delivery, error)

    def _record(self, delivery: Delivery, error: str | None) -> None:
        ev = delivery.event
        try:
            self._store.events.record_delivery(
                delivered=error is None,
                notice=delivery.notice,
                event_id=ev.id,
                channel=delivery.channel.name,
                attempts=delivery.attempts,
                task_id=ev.task_id,
                worker_id=ev.worker_id,
                error=error,
                actor=ACTOR,
            )
        except StoreError as exc:
            event(self._log, "notify.unrecorded", logging.WARNING, notice=delivery.notice,
                  event_id=ev.id, error=exc.message)  # fmt: skip
