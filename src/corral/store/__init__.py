"""The store: every state change corral makes, each one atomic transaction.

`Store` is written once over a `Driver` (driver.py); `open_store(url)` picks the driver
from the URL: a file path or `sqlite:///path` for SQLite (the default,
`.corral/corral.db`), `postgresql://...` for PostgreSQL (store/postgres/driver.py), or
`http(s)://...` for the store behind a `corral serve` (store/remote/transport.py).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.foundation.clock import Clock, SystemClock
from corral.foundation.errors import InvalidInput, StoreError
from corral.model.namespaces import DEFAULT_NAMESPACE, EVERY_NAMESPACE, checked
from corral.store.driver import Driver, LeaderLock
from corral.store.namespace_driver import NamespacedDriver
from corral.store.operations import REPOSITORIES, VIEWER, Transport, served
from corral.store.queries import migration_files

if TYPE_CHECKING:
    from corral.store.api_tokens import ApiTokens
    from corral.store.artifacts import Artifacts
    from corral.store.claims import Claims
    from corral.store.day_caps import DayCaps
    from corral.store.events import Events
    from corral.store.messages import Messages
    from corral.store.namespaces import Namespaces
    from corral.store.orchestrators import Orchestrators
    from corral.store.providers import Providers
    from corral.store.queues import Queues
    from corral.store.recovery import Recoveries
    from corral.store.retention import Retention
    from corral.store.review_staleness import ReviewStaleness
    from corral.store.reviews import Reviews
    from corral.store.runs import Runs
    from corral.store.schedules import Schedules
    from corral.store.sign_ins import SignIns
    from corral.store.tallies import Tallies
    from corral.store.task_pages import TaskPages
    from corral.store.tasks import Tasks
    from corral.store.workers import Workers


class Store:
    """Every state change corral makes, over one driver, as repositories built on first
    use (store/operations.py): `tasks`, `events`, `claims`, `workers`, `runs`, `reviews`,
    `schedules` ...; every operation in the handle's namespace (store/namespace_driver.py),
    every lookup by id included, but on the maintenance handle (`for_maintenance`).

    A store reached over HTTP is the same class with a `transport` (store/remote/): each
    operation declared `@served` is then run by the server."""

    NAME = ""  # the store's own operations travel by their bare names (`now`)

    # The repositories (REPOSITORIES in store/operations.py), built on first use.
    api_tokens: ApiTokens
    artifacts: Artifacts
    claims: Claims
    day_caps: DayCaps
    events: Events
    messages: Messages
    namespaces: Namespaces
    orchestrators: Orchestrators
    providers: Providers
    queues: Queues
    recovery: Recoveries
    retention: Retention
    review_staleness: ReviewStaleness
    reviews: Reviews
    runs: Runs
    schedules: Schedules
    sign_ins: SignIns
    tallies: Tallies
    task_pages: TaskPages
    tasks: Tasks
    workers: Workers

    def __init__(
        self,
        driver: Driver,
        namespace: str = DEFAULT_NAMESPACE,
        *,
        transport: Transport | None = None,
    ) -> None:
        self._scope = NamespacedDriver(driver, namespace)
        self._driver = self._scope
        self._transport = transport

    @property
    def transport(self) -> Transport | None:
        """What carries this store's operations to `corral serve`; None beside the database."""
        return self._transport

    @property
    def long_polls(self) -> bool:
        """Whether an exchange that asks for work waits for it (a remote store's long poll)."""
        return self._transport is not None

    if not TYPE_CHECKING:  # a typo stays an error for mypy; at run time, first use builds

        def __getattr__(self, attribute: str) -> Any:
            """Repository `attribute`, built over this store's driver (and transport) on
            first use and kept: a command loads only the modules of what it touches."""
            try:
                module, name = REPOSITORIES[attribute]
            except KeyError:
                raise AttributeError(attribute) from None
            repository = getattr(importlib.import_module(module), name)
            built = repository(self._driver, self._transport)
            self.__dict__[attribute] = built
            return built

    @property
    def namespace(self) -> str:
        """The namespace this handle reads and writes (model/namespaces.py)."""
        return self._scope.namespace

    def in_namespace(self, namespace: str) -> Store:
        """A handle on the same connection in `namespace`, a namespace's name (never the
        maintenance scope: `for_maintenance`); closing it closes both. Not across a server:
        a remote store acts in its token's one namespace."""
        if checked(namespace) == self.namespace:
            return self
        if self._transport is not None:
            expected = f"{self.namespace!r}, the namespace this client acts in"
            raise InvalidInput("--namespace", expected, namespace)
        return Store(self._scope.base, namespace)

    def for_maintenance(self) -> Store:
        """The maintenance handle on the same connection: it reads and changes every
        namespace (EVERY_NAMESPACE), for the reconciler, the scheduler pass, retention and
        the landing of reviewed tasks (runtime/maintenance.py), which no request reaches:
        `corral serve` hands requests `in_namespace` handles only. A remote store has none
        and returns itself: its server runs each call in the token's namespace."""
        if self._transport is not None or self.namespace == EVERY_NAMESPACE:
            return self
        return Store(self._scope.base, EVERY_NAMESPACE)

    @property
    def url(self) -> str:
        """Where this store lives."""
        return self._driver.url

    @property
    def dialect(self) -> str:
        """`sqlite` or `postgresql`."""
        return self._driver.dialect

    @served(VIEWER)
    def now(self) -> datetime:
        """The store's clock: every lease and heartbeat time is read from it."""
        return self._driver.now()

    @served(VIEWER)
    def schema_version(self) -> tuple[int, int]:
        """(the database's schema version, the newest this code knows)."""
        return self._driver.schema_version()

    def migrate(self) -> list[int]:
        """Apply pending migrations; the versions applied, oldest first."""
        return self._driver.migrate()

    def pending_migrations(self) -> list[tuple[int, str]]:
        """(version, name) of each migration this database has not had, oldest first."""
        if self._transport is not None:
            raise StoreError(
                "migrations run beside the database: run `corral db` on the server's host"
            )
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
        if self._transport is not None:
            self._transport.stop_waiting()

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
        from corral.store.remote.transport import HttpTransport

        transport = HttpTransport(url, token, namespace=namespace)
        return Store(transport, namespace, transport=transport)
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
