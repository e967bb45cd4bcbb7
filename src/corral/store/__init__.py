"""The store: every state change corral makes, each one atomic transaction.

`Store` is written once over a `Driver` (base.py); `open_store(url)` picks the driver
from the URL: a file path or `sqlite:///path` for SQLite (the default,
`.corral/corral.db`), and later `postgresql://...` for PostgreSQL.
"""

from __future__ import annotations

from datetime import datetime

from corral.clock import Clock, SystemClock
from corral.errors import StoreError
from corral.store.base import Driver
from corral.store.claim_ops import ClaimOps
from corral.store.message_ops import MessageOps
from corral.store.orchestrator_ops import OrchestratorOps
from corral.store.queue_ops import QueueOps
from corral.store.recovery_ops import RecoveryOps
from corral.store.review_ops import ReviewOps
from corral.store.run_ops import RunOps
from corral.store.task_ops import TaskOps
from corral.store.worker_ops import WorkerOps


class Store(
    TaskOps,
    ClaimOps,
    WorkerOps,
    RecoveryOps,
    RunOps,
    QueueOps,
    ReviewOps,
    MessageOps,
    OrchestratorOps,
):
    """Every state change corral makes, over one driver: tasks, claims, workers, repair,
    runs, queue limits, reviews, messages and the orchestrator row."""

    def __init__(self, driver: Driver) -> None:
        self._driver = driver

    @property
    def url(self) -> str:
        """Where this store lives."""
        return self._driver.url

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`."""
        return self._driver.dialect

    def now(self) -> datetime:
        """The store's clock: every lease and heartbeat time is read from it."""
        return self._driver.now()

    def schema_version(self) -> tuple[int, int]:
        """(the database's schema version, the newest this code knows)."""
        return self._driver.schema_version()

    def close(self) -> None:
        """Release the connection."""
        self._driver.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_store(url: str, *, clock: Clock | None = None) -> Store:
    """Open (creating and migrating if needed) the store at `url`."""
    from corral.store.sqlite import SQLiteDriver

    if url.startswith(("postgresql://", "postgres://")):
        raise StoreError(f"{url.rsplit('@', 1)[-1]}: PostgreSQL stores are not supported yet")
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url
    return Store(SQLiteDriver(path, clock or SystemClock()))
