"""A runner's memory gate: before each claim, whether the host has the memory its agent's
run needs (corral.model.admission decides; this reads the host and logs the change).

Shared by a runner's lanes: `worker.memory_held` is logged once as holding back begins,
with the reason, and `worker.memory_admits` once it ends, not at every claim.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from corral.foundation.logs import event
from corral.model.admission import memory_hold


def available_bytes() -> int:
    """The host's available memory now (what can be given to a new process without swap)."""
    import psutil  # noqa: PLC0415 - only for a profile that states its memory

    return int(psutil.virtual_memory().available)


class MemoryGate:
    """Whether a run of `need_mb` may start now, by `read()`'s figure of available bytes."""

    def __init__(
        self, need_mb: int, *, read: Callable[[], int], log: logging.Logger, worker: str
    ) -> None:
        self._need_mb, self._read, self._log, self._worker = need_mb, read, log, worker
        self._lock = threading.Lock()
        self._held: str | None = None

    def held(self) -> str | None:
        """Why no run may start now; None if one may."""
        reason = memory_hold(self._need_mb, self._read())
        with self._lock:
            was, self._held = self._held, reason
        if reason is not None and was is None:
            event(self._log, "worker.memory_held", logging.WARNING, worker=self._worker, why=reason)
        elif reason is None and was is not None:
            event(self._log, "worker.memory_admits", worker=self._worker)
        return reason
