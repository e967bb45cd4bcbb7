"""The SQLite driver: the embedded default store, one file shared by local processes.

Locking strategy:
- WAL journal: readers never block the writer and always see a consistent snapshot.
- Every write is one `BEGIN IMMEDIATE` transaction, which takes SQLite's write lock
  before its first read; the reads that decide a change and the change itself cannot
  interleave with another writer. One lock per transaction means no lock ordering and
  so no deadlock.
- Writers first queue on an advisory `flock` on `<db>.lock`. SQLite's busy handler polls
  with sleeps that grow to 100 ms, so under contention one process wins again and again
  while another waits; the kernel wakes a flock waiter as soon as the lock is free.
  SQLite's lock remains the guarantee (and `busy_timeout` guards writers that are not
  corral); the flock is only a fair queue in front of it. While another program holds
  the database, each writer in turn waits out its busy timeout: the time a writer spent
  queuing comes off its own, so one that has waited BUSY_TIMEOUT_S in the queue fails
  with StoreError as soon as its turn comes, and the queue turns over quickly. (The
  kernel does not promise a waiter its turn, so a writer among many may still wait out
  the whole lock: the orchestrator counts a call that slow as an outage too.)
- synchronous=NORMAL: a committed transaction survives the process being killed; a power
  loss may take back the last few (SQLite's documented WAL trade-off).
- Migrations run under the same flock, so processes that open a new database at once
  apply them exactly once; a database newer than this code is refused.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from typing import Any

from corral.foundation import filemodes
from corral.foundation.clock import Clock
from corral.foundation.durations import FIRST_INSTANT, LAST_INSTANT
from corral.foundation.errors import SchemaTooNew, StoreError
from corral.foundation.threads import ThreadService
from corral.model.namespaces import DEFAULT_NAMESPACE
from corral.store.driver import Json
from corral.store.queries import load_queries, migration_files, sql_path

BUSY_TIMEOUT_S = 10.0
QUEUED_LONG_S = 1.0  # a writer that queued longer waits only what is left of its timeout
# Write transactions between the passive WAL checkpoints this driver runs itself, on a
# thread of its own with its own connection: SQLite's automatic checkpoint would run
# inside COMMIT, while every queued writer waits, and fsync for up to 30 ms
# (bench/claim_cycle.py); run by the writer after COMMIT, it still held up that writer's
# next transaction (bench/runner_overhead.py).
CHECKPOINT_EVERY = 100
_json_cache: dict[frozenset[str], str] = {}
# Parameters SQLite takes as they are: most of them, so they skip `_encode`'s checks,
# which run while the write lock is held (bench/claim_cycle.py).
_AS_IS = frozenset({str, int, float, bytes, type(None)})
# Compact JSON; json.dumps builds a new encoder on every call that names separators.
_dumps = json.JSONEncoder(separators=(",", ":")).encode
_EMPTY_JSON: dict[Any, type[dict[str, Any]] | type[list[Any]]] = {"{}": dict, "[]": list}


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, frozenset):
        cached = _json_cache.get(value)
        if cached is None:
            cached = _json_cache[value] = json.dumps(sorted(value))
        return cached
    if isinstance(value, Json):
        return None if value.value is None else _dumps(value.value)
    if isinstance(value, list | tuple):
        return _dumps(value)
    return value


class _Tx:
    """A transaction on the driver's connection."""

    __slots__ = ("_conn", "_namespace", "_now_s", "_queries", "now")

    def __init__(
        self, conn: sqlite3.Connection, queries: dict[str, str], now: datetime, namespace: str
    ) -> None:
        self._conn = conn
        self._queries = queries
        self.now = now
        self._now_s = now.timestamp()
        self._namespace = namespace

    def _execute(self, query: str, params: dict[str, Any]) -> sqlite3.Cursor:
        encoded: dict[str, Any] = {"namespace": self._namespace}
        encoded.update({k: v if type(v) in _AS_IS else _encode(v) for k, v in params.items()})
        encoded["now"] = self._now_s
        return self._conn.execute(self._queries[query], encoded)

    def one(self, query: str, /, **params: Any) -> sqlite3.Row | None:
        """First row of `query`, or None."""
        rows: list[sqlite3.Row] = self._execute(query, params).fetchall()
        return rows[0] if rows else None

    def all(self, query: str, /, **params: Any) -> list[sqlite3.Row]:
        """All rows of `query`."""
        rows: list[sqlite3.Row] = self._execute(query, params).fetchall()
        return rows

    def run(self, query: str, /, **params: Any) -> int:
        """Rows changed by statement `query`."""
        cursor = self._execute(query, params)
        cursor.fetchall()  # rowcount is final only once a RETURNING statement is drained
        return cursor.rowcount

    def send_rows(
        self,
        query: str,
        rows: list[dict[str, Any]],
        /,
        json_columns: tuple[str, ...] = (),
        **params: Any,
    ) -> None:
        """Run `query` once per row, prepared once (executemany). The rows are filled in
        place: encoding only the columns named JSON, not testing every value, is what
        makes this cheaper than one statement over a JSON array."""
        shared: dict[str, Any] = {"namespace": self._namespace}
        shared.update({k: v if type(v) in _AS_IS else _encode(v) for k, v in params.items()})
        shared["now"] = self._now_s
        for row in rows:
            row.update(shared)
            for column in json_columns:
                value = row[column]
                if value is not None:
                    row[column] = _dumps(value)
        self._conn.executemany(self._queries[query], rows)

    def send(self, query: str, /, **params: Any) -> _Done:
        """Run `query` now (SQLite has nothing to send it with); its outcome, kept."""
        cursor = self._execute(query, params)
        rows: list[sqlite3.Row] = cursor.fetchall()
        return _Done(rows, cursor.rowcount)


class _Done:
    """The outcome of a statement already run (`Tx.send` on SQLite)."""

    __slots__ = ("_count", "_rows")

    def __init__(self, rows: list[sqlite3.Row], count: int) -> None:
        self._rows, self._count = rows, count

    def one(self) -> sqlite3.Row | None:
        """Its first row, or None."""
        return self._rows[0] if self._rows else None

    def all(self) -> list[sqlite3.Row]:
        """All its rows."""
        return self._rows

    def count(self) -> int:
        """Rows it changed."""
        return self._count


class SQLiteDriver:
    """One connection to one SQLite file, safe to share between threads of a process."""

    dialect = "sqlite"
    # Statements cost no round trip in-process: the store runs the exchange's itself.
    exchange_on_server = False

    def __init__(self, path: str, clock: Clock, *, migrate: bool = True) -> None:
        if not migrate and not os.path.exists(path):
            raise StoreError(f"database {path}: does not exist (create it with `corral init`)")
        self.path = path
        self.url = path
        self._clock = clock
        self._queries = load_queries("sqlite")
        self._latest = migration_files("sqlite")[-1][0]
        self._mutex = threading.Lock()
        self._writes = 0
        self._checkpointer: _Checkpointer | None = None
        self._conn = self._connect()
        self._lock_fd = -1
        try:
            current = self._open_lock_file()
            if migrate and current != self._latest:  # one PRAGMA is all an up-to-date store costs
                self.migrate()
        except BaseException:
            self._conn.close()
            if self._lock_fd >= 0:
                os.close(self._lock_fd)
            raise

    def _open_lock_file(self) -> int:
        """The flock queue's file, created only once the database is known to be one we can use;
        returns the database's schema version."""
        try:
            current, latest = self.schema_version()
        except sqlite3.Error as exc:  # not a database, or unreadable
            raise _wrap(self.path, exc) from None
        if current > latest:
            self._upgrade(current, latest)  # refuses, before anything is written
        if current == 0 and self._schema_cookie() != 0:  # tables: corral's, just made?
            # Another process may have committed the schema and its version between the two
            # reads (they are not one snapshot): ask the version again before refusing.
            current, latest = self.schema_version()
        if current == 0 and self._schema_cookie() != 0:  # tables, but never corral's
            raise StoreError(
                f"database {self.path}: not a corral database (another program's tables are"
                " in it): name another file"
            )
        try:
            self._lock_fd = self._lock_file()
        except OSError as exc:
            raise StoreError(
                f"database {self.path}: cannot create its lock file: {exc.strerror}"
            ) from None
        return current

    def _lock_file(self) -> int:
        """The file whose flock queues this database's writers: `PATH.lock` beside it, or,
        for an in-memory database (this handle's alone), an anonymous file, so that no
        `:memory:.lock` appears in the working folder and no other store shares its queue."""
        if not self.path.startswith(":"):
            return filemodes.open_file(self.path + ".lock", os.O_RDWR)
        import tempfile  # noqa: PLC0415 - only in-memory stores (tests, embedded use) need it

        fd, name = tempfile.mkstemp(prefix="corral-memory-lock-")
        os.unlink(name)
        return fd

    def _schema_cookie(self) -> int:
        """SQLite's count of schema changes: 0 in a file no program has made tables in."""
        with self._mutex:
            cookie: int = self._conn.execute("PRAGMA schema_version").fetchone()[0]
        return cookie

    def _connect(self) -> sqlite3.Connection:
        if os.path.isdir(self.path):
            raise StoreError(f"database {self.path}: is a directory")
        if os.path.exists(self.path) and not os.path.isfile(self.path):  # /dev/null, a fifo
            raise StoreError(f"database {self.path}: is not a regular file")
        if not os.path.exists(self.path) and not self.path.startswith(":"):
            # Made here with corral's file mode: SQLite gives its WAL and SHM files the
            # database's. A folder that is not there: sqlite3 says so below.
            with suppress(OSError):
                os.close(filemodes.open_file(self.path, os.O_RDWR))
        try:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            # One call for the three: each execute costs a round through the driver.
            # wal_autocheckpoint is a safety net only (CHECKPOINT_EVERY).
            conn.executescript(
                "PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 10000;"
                " PRAGMA foreign_keys = ON;"
            )
        except sqlite3.Error as exc:
            raise _wrap(self.path, exc) from None
        return conn

    def now(self) -> datetime:
        """The local clock (the store's clock for SQLite)."""
        return self._clock.now()

    def instant(self, value: Any) -> datetime:
        """Epoch seconds to an aware UTC datetime; a value past the calendar (a row written
        by hand or by an older corral) reads as its edge, so the row still lists."""
        try:
            return datetime.fromtimestamp(value, UTC)
        except (OverflowError, ValueError, OSError):
            return LAST_INSTANT if value > 0 else FIRST_INSTANT

    def json(self, value: Any) -> Any:
        """JSON text to Python."""
        empty = _EMPTY_JSON.get(value)  # most payloads and labels: no parse for them
        return json.loads(value) if empty is None else empty()

    @contextmanager
    def _flock(self) -> Iterator[None]:
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    @contextmanager
    def _transaction(self, begin: str, exclusive: bool, namespace: str) -> Iterator[_Tx]:
        queued_at = self._clock.monotonic()
        with self._mutex:
            if exclusive:
                fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            queued_s = self._clock.monotonic() - queued_at if exclusive else 0.0
            try:
                if queued_s > QUEUED_LONG_S:
                    left_ms = max(0, round((BUSY_TIMEOUT_S - queued_s) * 1000))
                    self._conn.execute(f"PRAGMA busy_timeout = {left_ms}")
                self._conn.execute(begin)
                yield _Tx(self._conn, self._queries, self._clock.now(), namespace)
                self._conn.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                raise _wrap(self.path, exc) from None
            except BaseException:
                self._rollback()
                raise
            finally:
                if queued_s > QUEUED_LONG_S:
                    self._conn.execute(f"PRAGMA busy_timeout = {round(BUSY_TIMEOUT_S * 1000)}")
                if exclusive:
                    fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            if exclusive:
                self._checkpoint_now_and_then()

    def _checkpoint_now_and_then(self) -> None:
        """Every CHECKPOINT_EVERY writes, have the WAL copied back, blocking no writer."""
        self._writes += 1
        if self._writes % CHECKPOINT_EVERY == 0:
            if self._checkpointer is None:
                self._checkpointer = _Checkpointer(self.path)
            self._checkpointer.request()

    def _rollback(self) -> None:
        if self._conn.in_transaction:
            self._conn.execute("ROLLBACK")

    def read(self, namespace: str = DEFAULT_NAMESPACE) -> Any:
        """A deferred transaction: one snapshot, no write lock."""
        return self._transaction("BEGIN", exclusive=False, namespace=namespace)

    def write(self, namespace: str = DEFAULT_NAMESPACE) -> Any:
        """An immediate transaction behind the fair flock queue."""
        return self._transaction("BEGIN IMMEDIATE", exclusive=True, namespace=namespace)

    def call(self, query: str, /, **params: Any) -> list[sqlite3.Row]:
        """Run statement `query` as a write transaction of its own; its rows."""
        # The caller names the query (store code says `driver.call("name", ...)`).
        with self.write(params.pop("namespace", DEFAULT_NAMESPACE)) as transaction:
            found: list[sqlite3.Row] = transaction.all(query, **params)
            return found

    def schema_version(self) -> tuple[int, int]:
        """(this database's user_version, the newest migration this code has)."""
        with self._mutex:
            version: int = self._conn.execute("PRAGMA user_version").fetchone()[0]
        return version, self._latest

    def migrate(self) -> list[int]:
        """Apply pending migrations under the flock; the versions applied."""
        try:
            latest = self._latest
            with self._mutex, self._flock():
                current = self._conn.execute("PRAGMA user_version").fetchone()[0]
                if current == latest:
                    return []
                self._conn.execute("PRAGMA journal_mode = WAL")
                self._upgrade(current, latest)
            return list(range(current + 1, latest + 1))
        except sqlite3.Error as exc:
            self._rollback()
            raise _wrap(self.path, exc) from None

    def _upgrade(self, current: int, latest: int) -> None:
        if current > latest:
            raise SchemaTooNew(
                f"database {self.path} has schema version {current}, newer than this "
                f"corral knows ({latest}): upgrade corral"
            )
        if current == 0:
            self._run_script(sql_path("sqlite", "schema.sql"), latest)
            return
        for version, path in migration_files("sqlite"):
            if version > current:
                self._run_script(path, version)

    def _run_script(self, path: str, version: int) -> None:
        with open(path, encoding="utf-8") as handle:
            body = handle.read()
        # executescript commits first, so the transaction is part of the script itself.
        self._conn.executescript(
            f"BEGIN IMMEDIATE;\n{body}\nPRAGMA user_version = {int(version)};\nCOMMIT;"
        )

    def wake_on_work(self, wake: threading.Event) -> Callable[[], None]:
        """Nothing to listen to on one machine: idle runners poll; the stop does nothing."""
        return _nothing_to_stop

    def wake_on_events(self, wake: threading.Event) -> None:
        """Nothing tells one machine's readers of a commit: followers poll (by id, cheaply)."""
        return None

    def leader_lock(self) -> None:
        """None: a SQLite store has one orchestrator, the holder of its state row."""
        return None

    def close(self) -> None:
        """Close the connection and the lock file (and stop the checkpoint thread)."""
        with self._mutex:
            if self._checkpointer is not None:
                self._checkpointer.stop()
            self._conn.close()
            os.close(self._lock_fd)


class _Checkpointer(ThreadService):
    """A thread with its own connection that runs a passive WAL checkpoint when asked.

    Its stop finishes the checkpoint under way, if any, and waits for the thread.
    """

    def __init__(self, path: str) -> None:
        super().__init__("corral-checkpoint")
        self._path = path
        self._wanted = threading.Event()
        self.start()

    def request(self) -> None:
        """Checkpoint soon (requests made meanwhile are one checkpoint)."""
        self._wanted.set()

    def _interrupt(self) -> None:
        self._wanted.set()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(self._path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        except sqlite3.Error:
            return  # best effort: SQLite's automatic checkpoint is the safety net
        try:
            while self._wanted.wait() and not self.stopping.is_set():
                self._wanted.clear()
                # Best effort: if it cannot run now, the next one or the safety net catches up.
                with suppress(sqlite3.Error):
                    conn.execute("PRAGMA wal_checkpoint(PASSIVE)")
        finally:
            conn.close()


def _wrap(path: str, exc: sqlite3.Error) -> StoreError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        text = f"locked by another process for more than {BUSY_TIMEOUT_S:g} s"
    elif "readonly" in text:
        text = "read-only (check the file's and its folder's permissions)"
    elif "unable to open" in text:
        text = "cannot open (does its folder exist, and may this user write there?)"
    return StoreError(f"database {path}: {text}")


def _nothing_to_stop() -> None:
    """What stops a SQLite store's (absent) ready listener."""


def commit_counter(path: str) -> Callable[[], int | None]:
    """A reader of `PRAGMA data_version` on a connection of its own: the number changes
    whenever another connection (another process, or this one's store) commits. None
    while the database cannot be read. For `corral serve`, whose waiting claims have no
    notification to wait on (server/work_signal.py)."""
    conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, check_same_thread=False)

    def read() -> int | None:
        try:
            row = conn.execute("PRAGMA data_version").fetchone()
        except sqlite3.Error:
            return None
        return int(row[0])

    return read
