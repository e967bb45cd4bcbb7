"""Store calls a runner does not give up on after a run: tried again while the store is out.

A finished task's report (and the record of a run whose claim ended elsewhere) is worth a
few seconds' wait: a brief outage (a SQLite file locked by a long writer, a PostgreSQL
restart) must not leave a task that is done to the reconciler. The waits grow from 0.2 s
to at most 5 s, on the runner's clock; the last try's error is the caller's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from corral.errors import StoreError
from corral.logs import event
from corral.runtime.worker.config import Workplace

REPORT_RETRIES = 5  # tries after the first, while the store is unavailable
T = TypeVar("T")


def retrying(action: Callable[[], T], place: Workplace) -> T:
    """`action()`, tried again with growing waits while the store is unavailable."""
    for attempt in range(REPORT_RETRIES):
        try:
            return action()
        except StoreError as exc:
            event(
                place.log,
                "store.retry",
                logging.WARNING,
                worker_id=place.worker_id,
                attempt=attempt + 1,
                error=exc.message,
            )
            place.clock.sleep(min(5.0, 0.2 * 2**attempt))
    return action()
