"""The store: every state change corral makes, each one atomic transaction.

`Store` is written once over a `Driver` (driver.py); `open_store(url)` picks the driver
from the URL: a file path or `sqlite:///path` for SQLite (the default,
`.corral/corral.db`), `postgresql://...` for PostgreSQL (store/postgres/driver.py), or
`http(s)://...` for the store behind a `corral serve` (store/remote/client.py).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from datetime import datetime

from corral.clock import Clock, SystemClock
from corral.errors import InvalidInput, StoreError
from corral.model.namespaces import DEFAULT_NAMESPACE
from corral.store.artifacts import ArtifactOps
from corral.store.claims import ClaimOps
from corral.store.dashboard_sessions import DashboardSessionOps
from corral.store.driver import Driver, LeaderLock
from corral.store.events import EventOps
from corral.store.messages import MessageOps
from corral.store.namespaced import NamespacedDriver
from corral.store.namespaces import NamespaceOps
from corral.store.orchestrators import OrchestratorOps
from corral.store.providers import ProviderOps
from corral.store.queries import migration_files
from corral.store.queues import QueueOps
from corral.store.recovery import RecoveryOps
from corral.store.retention import RetentionOps
from corral.store.review_staleness import ReviewStalenessOps
from corral.store.reviews import ReviewOps
from corral.store.runs import RunOps
from corral.store.schedules import ScheduleOps
from corral.store.tallies import TallyOps
from corral.store.task_pages import TaskPageOps
from corral.store.tasks import TaskOps
from corral.store.tokens import TokenOps
from corral.store.workers import WorkerOps


class Store(
    TaskOps,
    TaskPageOps,
    EventOps,
    ClaimOps,
    WorkerOps,
    RecoveryOps,
    RunOps,
    ArtifactOps,
    QueueOps,
    ReviewOps,
    ReviewStalenessOps,
    MessageOps,
    OrchestratorOps,
    ScheduleOps,
    ProviderOps,
    TokenOps,
    DashboardSessionOps,
    TallyOps,
    RetentionOps,
    NamespaceOps,
):
    """Every state change corral makes, over one driver: tasks, the event log, claims,
    batches, workers, repair, runs, queue limits, reviews, messages, the orchestrator
    row, schedules, the tallies /metrics reads, the dashboard's pages of tasks and the
    namespaces' counts; every operation in the handle's namespace (store/namespaced.py)."""

    # Whether an exchange that asks for work waits for it (the HTTP store's long poll).
    long_polls = False

    def __init__(self, driver: Driver, namespace: str = DEFAULT_NAMESPACE) -> None:
        self._scope = NamespacedDriver(driver, namespace)
        self._driver = self._scope

    @property
    def namespace(self) -> str:
        """The namespace this handle reads and writes (model/namespaces.py)."""
        return self._scope.namespace

    def in_namespace(self, namespace: str) -> Store:
        """A handle on the same connection in `namespace`; closing it closes both."""
        return self if namespace == self.namespace else Store(self._scope.base, namespace)

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

    def migrate(self) -> list[int]:
        """Apply pending migrations; the versions applied, oldest first."""
        return self._driver.migrate()

    def pending_migrations(self) -> list[tuple[int, str]]:
        """(version, name) of each migration this database has not had, oldest first."""
        current, _ = self.schema_version()
        return [
            (version, os.path.basename(path).removesuffix(".sql"))
            for version, path in migration_files(self.dialect)
            if version > current
        ]

    def wake_on_work(self, wake: threading.Event) -> Callable[[], None]:
        """Set `wake` whenever a task becomes ready (PostgreSQL's NOTIFY; never on SQLite,
        where runners poll); returns the function that stops listening."""
        return self._driver.wake_on_work(wake)

    def leader_lock(self) -> LeaderLock | None:
        """The lock that elects the leader of several orchestrators; None on a store with
        one orchestrator (SQLite)."""
        return self._driver.leader_lock()

    def stop_waiting(self) -> None:
        """End any wait for work in flight, and make no more (a runner stopping); nothing to
        end on a local store, whose runners wait on their own wake event."""

    def close(self) -> None:
        """Release the connection."""
        self._driver.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def is_http_url(url: str) -> bool:
    """True for the `http(s)://` URL of a store behind `corral serve`."""
    return url.startswith(("http://", "https://"))


def is_postgres_url(url: str) -> bool:
    """True for a `postgresql://` (or `postgres://`) URL."""
    return url.startswith(("postgresql://", "postgres://"))


def open_store(
    url: str,
    *,
    clock: Clock | None = None,
    migrate: bool = True,
    token: str | None = None,
    namespace: str = DEFAULT_NAMESPACE,
) -> Store:
    """Open the store at `url` for `namespace`, applying pending migrations unless
    `migrate` is False.

    SQLite reads `clock` (default: the system clock); PostgreSQL reads the server's
    clock unless a test injects one. An `http(s)://` store is a `corral serve`'s, reached
    with `token` (default: CORRAL_TOKEN), whose namespace must be `namespace`.
    """
    if is_http_url(url):
        from corral.store.remote.client import RemoteStore

        return RemoteStore(url, token, namespace=namespace)
    if is_postgres_url(url):
        try:
            from corral.store.postgres.driver import PostgresDriver
        except ImportError as exc:
            raise StoreError(
                f"PostgreSQL needs psycopg ({exc.name} is missing): "
                "pip install 'corral[postgresql]'"
            ) from None
        return Store(PostgresDriver(url, clock, migrate=migrate), namespace)
    from corral.store.sqlite import SQLiteDriver

    scheme, sep, _ = url.partition("://")
    if sep and scheme != "sqlite" and scheme.isalnum():  # the rest may hold a password
        expected = "a SQLite file path, sqlite:///PATH, a postgresql:// or an http(s):// URL"
        raise InvalidInput("db", expected, f"{scheme}://...")
    path = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else url
    return Store(SQLiteDriver(path, clock or SystemClock(), migrate=migrate), namespace)
