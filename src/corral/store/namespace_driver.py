"""A driver seen from one namespace: every query it runs is given `:namespace`.

The store is written once over a driver (driver.py); scoping it to a namespace is this
one seam, not a parameter threaded through every operation. A query that names
`:namespace` reads or writes that namespace's rows, and every lookup by id names it (a
task, a run, a worker, a schedule, a claim by its fencing token ...): another namespace's
id finds nothing, as an unknown one. The maintenance handle's namespace is
EVERY_NAMESPACE (model/namespaces.py), which those lookups and the reconciler's and the
scheduler's reads take for every namespace (`Store.for_maintenance`). Several handles in
several namespaces share one connection (`Store.in_namespace`), as `corral serve` does for
its tokens' namespaces.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any

from corral.store.driver import Driver, LeaderLock, Row, Tx


class NamespacedDriver:
    """`base`, with `namespace` bound in every transaction it opens."""

    __slots__ = ("base", "dialect", "exchange_on_server", "namespace", "url")

    def __init__(self, base: Driver, namespace: str) -> None:
        self.base = base
        self.namespace = namespace
        self.dialect = base.dialect
        self.url = base.url
        self.exchange_on_server = base.exchange_on_server

    def read(self, namespace: str | None = None) -> AbstractContextManager[Tx]:
        """A read transaction in this namespace (or the one named)."""
        return self.base.read(namespace or self.namespace)

    def write(self, namespace: str | None = None) -> AbstractContextManager[Tx]:
        """A write transaction in this namespace (or the one named)."""
        return self.base.write(namespace or self.namespace)

    def call(self, query: str, /, **params: Any) -> list[Row]:
        """The driver's `call`, in this namespace unless the query is given one."""
        params.setdefault("namespace", self.namespace)
        return self.base.call(query, **params)

    def now(self) -> datetime:
        """The store's clock."""
        return self.base.now()

    def instant(self, value: Any) -> datetime:
        """Decode a non-null instant column."""
        return self.base.instant(value)

    def json(self, value: Any) -> Any:
        """Decode a non-null JSON column."""
        return self.base.json(value)

    def schema_version(self) -> tuple[int, int]:
        """(the database's schema version, the newest this code knows)."""
        return self.base.schema_version()

    def migrate(self) -> list[int]:
        """Apply pending migrations."""
        return self.base.migrate()

    def wake_on_work(self, wake: threading.Event) -> Callable[[], None]:
        """The driver's wake-up on new work."""
        return self.base.wake_on_work(wake)

    def wake_on_events(self, wake: threading.Event) -> Callable[[], None] | None:
        """The driver's wake-up on new events."""
        return self.base.wake_on_events(wake)

    def leader_lock(self) -> LeaderLock | None:
        """The driver's leader lock."""
        return self.base.leader_lock()

    def close(self) -> None:
        """Release the connection."""
        self.base.close()
