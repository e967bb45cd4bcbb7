"""The only place that reads the wall clock or sleeps.

Everything else is handed a `Clock`, so tests can move time by hand (`FakeClock`)
instead of sleeping. Instants are aware UTC datetimes; durations are seconds.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    """Wall time for records, monotonic time for intervals, and sleeping."""

    def now(self) -> datetime:
        """The current instant, aware and in UTC."""
        ...

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back, for measuring intervals."""
        ...

    def sleep(self, seconds: float) -> None:
        """Wait for `seconds`."""
        ...

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Wait up to `seconds` for `event`; True if it is set."""
        ...

    def wait_readable(self, fd: int, seconds: float) -> bool:
        """Wait up to `seconds` for file descriptor `fd` (a pidfd ...) to be readable."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        """The current instant, aware and in UTC."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """`time.monotonic()`."""
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        """`time.sleep(seconds)`."""
        time.sleep(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """`event.wait(seconds)`: wakes at once when the event is set."""
        return event.wait(seconds)

    def wait_readable(self, fd: int, seconds: float) -> bool:
        """`select` on `fd`: wakes at once when it becomes readable."""
        return _readable(fd, seconds)


class FakeClock:
    """A clock that moves only when told to; `sleep` advances it instead of waiting."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2030, 1, 1, tzinfo=UTC)
        self._mono = 0.0

    def now(self) -> datetime:
        """The fake current instant."""
        return self._now

    def monotonic(self) -> float:
        """Seconds advanced so far."""
        return self._mono

    def sleep(self, seconds: float) -> None:
        """Advance by `seconds` at once."""
        self.advance(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Advance by `seconds` unless the event is already set."""
        if not event.is_set():
            self.advance(seconds)
        return event.is_set()

    def wait_readable(self, fd: int, seconds: float) -> bool:
        """Advance by `seconds` unless `fd` is readable already (it is not waited for)."""
        if _readable(fd, 0.0):
            return True
        self.advance(seconds)
        return False

    def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`."""
        self._now += timedelta(seconds=seconds)
        self._mono += seconds


def _readable(fd: int, timeout_s: float) -> bool:
    """Whether `fd` is readable within `timeout_s`."""
    # Only pidfd waits need `select`, an extension module: every CLI command imports this
    # module (through the store), so it is loaded here, on first use.
    import select  # noqa: PLC0415 - off the CLI's start-up path (bench/cli_latency.py)

    return bool(select.select([fd], [], [], timeout_s)[0])
