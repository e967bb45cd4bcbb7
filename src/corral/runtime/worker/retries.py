"""Store calls a runner does not give up on after a run: tried again while the store is out.

A finished task's report (and the record of a run whose claim ended elsewhere) is worth a
few seconds' wait: a brief outage (a SQLite file locked by a long writer, a PostgreSQL
restart) must not leave a task that is done to the reconciler. The waits grow from 0.1 s
to at most 0.5 s, on the runner's clock, so a store that returns is used again within half
a second; the last try's error is the caller's (a runner's lane keeps the reports for
its next exchange).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TypeVar

from corral.foundation.errors import StoreError, WaitEnded
from corral.foundation.logs import event
from corral.runtime.worker.config import Workplace

REPORT_RETRIES = 5  # tries after the first, while the store is unavailable
MAX_WAIT_S = 0.5
T = TypeVar("T")


def retrying(action: Callable[[], T], place: Workplace) -> T:
    """`action()`, tried again with growing waits while the store is unavailable."""
    for attempt in range(REPORT_RETRIES):
        try:
            return action()
        except WaitEnded:
            raise  # the runner is stopping: its next exchange, without a wait, reports
        except StoreError as exc:
            event(
                place.log,
                "store.retry",
                logging.WARNING,
                worker_id=place.worker_id,
                attempt=attempt + 1,
                error=exc.message,
            )
            place.clock.sleep(min(MAX_WAIT_S, 0.1 * 2**attempt))
    return action()
