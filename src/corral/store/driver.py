"""What a database driver provides: transactions that run named queries.

Every operation of the `Store` (store.py) is written once over this protocol, in the
manner of River's driver interface; SQLite and PostgreSQL differ only in their driver
and their `sql/<dialect>/` files. The contract a driver keeps:

- `write()` is one atomic transaction. Reads made inside it are locking reads: no other
  writer can change what they returned before the transaction ends (SQLite: BEGIN
  IMMEDIATE takes the write lock up front; PostgreSQL: those queries say FOR UPDATE).
- Every conditional UPDATE is a compare-and-set; RETURNING or the row count tells the
  store whether it applied, and the store raises the precise error when it did not.
- `tx.send` runs a statement whose outcome the store does not need at once: a driver may
  send it with what follows (PostgreSQL pipelines it) and learn its outcome at the next
  read, at the latest at COMMIT. A statement that fails still fails the transaction, which
  rolls back and raises. A compare-and-set that can fail is read from its `Sent` before
  the transaction ends, so a failed one still rolls back and raises its precise error.
- `tx.send_rows` runs one statement for each of many rows (a batch's events or runs),
  without waiting, as `send`, each dialect the way it is cheapest: PostgreSQL sends the
  rows as one JSON array, the parameter `rows`, in one statement, since every statement
  costs the server; SQLite prepares the statement once and runs it per row
  (`executemany`), since pulling each column out of JSON text cost it more than the
  insert itself (bench/runner_throughput.py).
- `call` runs one statement as a transaction of its own, as cheaply as the driver can
  (PostgreSQL: autocommit, one round trip).
- `exchange_on_server` says the database runs the exchange (every claim and every
  reported outcome, store/exchange.py) as a server-side function its migrations install
  (PostgreSQL: postgres/exchange.py), one `call` per exchange, instead of the store running
  its steps one statement at a time.
- `tx.now` is the store's clock, read once at the start of the transaction, and every
  query receives it as the parameter `now`.
- Parameters arrive as Python values: str, int, float, bool, None, datetime; list,
  tuple or frozenset of str for arrays (`IN` filters, kinds, queues); and `Json(value)`
  for a JSON document column (payload, labels, result, event data). The driver encodes
  each for its dialect. Rows come back as mappings by column name; `instant` and `json`
  decode a dialect's columns.
- Driver errors leave the driver only as `corral.foundation.errors.StoreError`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

Row = Any  # a mapping-like row: row["column"]


class Json:
    """A parameter to store as a JSON document, whatever its Python type (42 and "ok" too)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class Tx(Protocol):
    """One open transaction."""

    now: datetime

    def one(self, query: str, /, **params: Any) -> Row | None:
        """Run `query`; its first row, or None."""
        ...

    def all(self, query: str, /, **params: Any) -> list[Row]:
        """Run `query`; all its rows."""
        ...

    def run(self, query: str, /, **params: Any) -> int:
        """Run statement `query`; the number of rows it changed."""
        ...

    def send(self, query: str, /, **params: Any) -> Sent:
        """Run `query` without waiting for its outcome (see the contract above); read the
        result, if at all, before the transaction ends."""
        ...

    def send_rows(
        self,
        query: str,
        rows: list[dict[str, Any]],
        /,
        json_columns: tuple[str, ...] = (),
        **params: Any,
    ) -> None:
        """Run statement `query` for each of `rows` (its parameters by name, beside `params`,
        which all rows share), in order, without waiting for the outcome (see the contract
        above). The values of `json_columns` are stored as JSON. The rows are the caller's
        to give: a driver may change them."""
        ...


class Sent(Protocol):
    """A statement sent with `Tx.send`; asking for its outcome waits for it."""

    def one(self) -> Row | None:
        """Its first row, or None."""
        ...

    def all(self) -> list[Row]:
        """All its rows."""
        ...

    def count(self) -> int:
        """The number of rows it changed."""
        ...


class Driver(Protocol):
    """A connection to one database, and how its columns decode."""

    dialect: str
    url: str
    exchange_on_server: bool  # the exchange is one server-side function (see above)

    def read(self, namespace: str = ...) -> AbstractContextManager[Tx]:
        """A read-only transaction: one consistent snapshot, whose queries get `namespace`
        as `:namespace` (store/namespace_driver.py)."""
        ...

    def write(self, namespace: str = ...) -> AbstractContextManager[Tx]:
        """A write transaction (see the contract above), its queries in `namespace`."""
        ...

    def call(self, query: str, /, **params: Any) -> list[Row]:
        """Run the one statement `query` as a write transaction of its own, with the contract
        of `write()`; its rows."""
        ...

    def now(self) -> datetime:
        """The store's clock."""
        ...

    def instant(self, value: Any) -> datetime:
        """Decode a non-null instant column."""
        ...

    def json(self, value: Any) -> Any:
        """Decode a non-null JSON column."""
        ...

    def schema_version(self) -> tuple[int, int]:
        """(the database's schema version, the newest this code knows)."""
        ...

    def migrate(self) -> list[int]:
        """Apply pending migrations, once however many processes ask; the versions applied."""
        ...

    def wake_on_work(self, wake: threading.Event) -> Callable[[], None]:
        """Set `wake` when a task becomes ready, as far as the database can tell (PostgreSQL:
        LISTEN/NOTIFY; SQLite: never, its runners poll); returns the function that stops it."""
        ...

    def wake_on_events(self, wake: threading.Event) -> Callable[[], None] | None:
        """Set `wake` whenever events are committed (PostgreSQL: LISTEN/NOTIFY); the
        function that stops it, or None where the database cannot tell (SQLite)."""
        ...

    def leader_lock(self) -> LeaderLock | None:
        """The lock that elects one leader among several orchestrators (PostgreSQL); None
        where a store has a single orchestrator, the holder of its row (SQLite)."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...


class LeaderLock(Protocol):
    """A lock held by a session of its own, released by the server when that session ends."""

    def try_acquire(self) -> bool:
        """Take it if free; True while this session holds it (asking again re-checks)."""
        ...

    def release(self) -> None:
        """Give it up."""
        ...
