"""The PostgreSQL driver: one database shared by workers on many hosts (psycopg 3 + a pool).

Imported only when a `postgresql://` URL is opened, so the SQLite CLI path never loads
psycopg.

Clock: lease, heartbeat and schedule times come from the server, so hosts with skewed
clocks agree. Queries say `:now`; the driver binds it to `now()`, which PostgreSQL fixes
at the start of each transaction, so every statement of one transaction sees one instant
and `tx.now` (read with `SELECT now()` only when Python asks for it) is that same instant.
A test injects a `Clock` instead (`open_store(url, clock=FakeClock())`): `:now` is then
bound to the clock's reading, taken once per transaction, exactly as on SQLite.

Transactions and locking:
- `write()` is one READ COMMITTED transaction. Every UPDATE is a compare-and-set (its
  WHERE re-checks the current row after any wait). The reads that decide a change lock
  what they read, and every transaction takes row locks in one order, task -> claim ->
  worker, so no two wait on each other in a circle: a heartbeat extends its claims before
  it touches its worker row; ending a claim locks the claim's task first. The one
  exception is a claim, which locks its worker first (its capacity must hold until
  commit) and then only a ready task and a brand-new claim, which no holder of a
  claim or worker lock waits for in turn. Before its worker, a claim locks the rows of
  queues with a running or rate limit, and an enqueue into a queue with max_ready locks
  that queue's row, so each counts what the one before it committed.
- A lock waited for shows the locked row as it is now, but the rest of that statement
  still reads the snapshot from before the wait; a decision that needs both is made by a
  later statement (see cancel_task, release_task and queue_room in queries.sql).
- A claim of the next task uses `FOR UPDATE SKIP LOCKED`; a claim of a named task waits
  for its row and re-checks it. The partial unique index claims_one_active_per_task is the final
  word on one active claim per task.
- `read()` is one REPEATABLE READ READ ONLY snapshot running the same named queries with
  their locking clauses removed.

Round trips: every transaction runs in psycopg's pipeline mode. BEGIN travels with the
first statement; `tx.send` queues a statement without waiting for it; `tx.one`, `tx.all`,
`tx.run` and reading a `Sent` wait for everything queued so far, in one round trip; COMMIT
travels with whatever is still queued. A claim by id takes 4 round trips (7 when each
statement waited). The exchange (every claim and every reported outcome) is one call of
a server function (postgres/exchange.py), run by `call()` as a transaction of its own:
autocommit, one round trip, no pipeline, whose bookkeeping costs the client more than it
saves for a single statement (bench/pg_claim_cycle.py). A queued
statement that fails aborts the transaction: the statements after it and the COMMIT are
skipped by the server, the error is raised at the next wait, and the transaction rolls
back as any other failure does.

Connections: a small pool per process. Because BEGIN is not waited for on its own, a
pooled connection is checked before use without a round trip: the server, ending a
session (a restart, pg_terminate_backend), first sends its reason or closes the socket,
and an idle pooled connection has nothing else to read, so one with anything to read is
discarded and the next one tried. A connection lost after that leaves as `StoreError`,
and callers (the runner) retry with backoff. While the server is out, a caller waiting
for a connection makes the pool try to connect every POOL_ASK_S, so a server back after
any outage is in use within that much. A transaction whose COMMIT was lost with the
connection is safe to retry: fencing tokens refuse a second completion.

Migrations run at the first connection (or `corral db migrate`) inside one transaction
that holds an advisory lock, so processes racing to migrate apply them exactly once.
The versions applied are rows of `corral_migrations`, numbered as SQLite's user_version.
"""

from __future__ import annotations

import contextlib
import logging
import re
import select
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from corral.foundation.clock import Clock
from corral.foundation.errors import SchemaTooNew, StoreError
from corral.model.namespaces import DEFAULT_NAMESPACE
from corral.store.driver import Json
from corral.store.postgres import instants
from corral.store.postgres.connections import FollowerListener, LeaderLock, Listener
from corral.store.postgres.errors import describe
from corral.store.queries import load_queries, migration_files, read_sql_file, sql_path
from corral.store.urls import safe_url

CONNECT_TIMEOUT_S = 5  # a refused or unroutable server is reported, not waited on
POOL_MAX = 4  # a runner needs its claiming slots plus the heartbeat thread
POOL_WAIT_S = 3.0  # waiting for a pooled connection while the server is away
# While it waits, a caller asks the pool again this often, and each ask with no connection
# in the pool makes it try to connect at once (it gives up a failed try at once, instead of
# retrying on its own backoff of 1 s doubling to minutes): a server back after a long
# outage is in use within this much, not tens of seconds later.
POOL_ASK_S = 0.1
MIGRATION_LOCK = "corral.migrate"  # advisory lock key (hashed per schema)

_LOCKING = re.compile(
    r"\s+FOR\s+(?:NO\s+KEY\s+)?(?:UPDATE|SHARE)(?:\s+OF\s+\w+(?:\s*,\s*\w+)*)?"
    r"(?:\s+SKIP\s+LOCKED|\s+NOWAIT)?",
    re.IGNORECASE,
)
_PARAM = re.compile(r"(?<![:\w]):(\w+)")
_COMMENT = re.compile(r"--[^\n]*")

_VERSION_TABLE = """
CREATE TABLE IF NOT EXISTS corral_migrations (
    version    integer     PRIMARY KEY,
    applied_at timestamptz NOT NULL DEFAULT now()
)"""


def compile_queries(server_clock: bool) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(write, read) texts of every named query, in psycopg's `%(name)s` style.

    With `server_clock`, `:now` becomes `now()`; otherwise it is a parameter. The texts
    are bytes, which psycopg takes as they are (its typing wants literal strings).
    """
    write, read = {}, {}
    for name, text in load_queries("postgresql").items():
        sql = _COMMENT.sub("", text).replace("%", "%%")
        sql = _PARAM.sub(
            lambda m: "now()" if server_clock and m.group(1) == "now" else f"%({m.group(1)})s",
            sql,
        )
        write[name] = sql.encode()
        read[name] = _LOCKING.sub("", sql).encode()
    return write, read


def _encode(value: Any) -> Any:
    if isinstance(value, Json):
        return None if value.value is None else Jsonb(value.value)
    if isinstance(value, frozenset):
        return sorted(str(v) for v in value)
    return value


class _Row:
    """A row readable by column name or by position, like sqlite3.Row."""

    __slots__ = ("_index", "_values")

    def __init__(self, values: tuple[Any, ...], index: dict[str, int]) -> None:
        self._values = values
        self._index = index

    def __getitem__(self, key: str | int) -> Any:
        return self._values[key if isinstance(key, int) else self._index[key]]

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def keys(self) -> list[str]:
        """The column names, in order."""
        return list(self._index)


def _row_factory(cursor: Any) -> Any:
    # Column names straight from the result: cursor.description builds a Column object
    # per column per statement, a few percent of a claim cycle.
    result = cursor.pgresult
    fields = range(result.nfields) if result is not None else ()
    index = {(result.fname(i) or b"").decode(): i for i in fields}
    return lambda values: _Row(values, index)


class _Tx:
    """A transaction on one pooled connection in pipeline mode (see the module doc)."""

    __slots__ = ("_bound_now", "_conn", "_cursor", "_namespace", "_now", "_pipeline", "_queries")

    def __init__(
        self,
        conn: psycopg.Connection[Any],
        pipeline: psycopg.Pipeline,
        queries: dict[str, bytes],
        now: datetime | None,
        namespace: str,
    ) -> None:
        self._conn = conn
        self._pipeline = pipeline
        self._cursor = conn.cursor(row_factory=_row_factory)
        self._queries = queries
        self._now = now
        # A test clock's reading is bound as :now; the server's now() is in the SQL itself.
        # :namespace is the store handle's unless a query is given one.
        self._bound_now: dict[str, Any] = {} if now is None else {"now": now}
        self._namespace = namespace

    @property
    def now(self) -> datetime:
        """The transaction's instant: the test clock's, else the server's now()."""
        if self._now is None:
            row = self._cursor.execute(b"SELECT now()").fetchone()
            assert row is not None
            self._now = _utc(row[0])
        return self._now

    def _execute(
        self, query: str, params: dict[str, Any], cursor: psycopg.Cursor[Any] | None = None
    ) -> psycopg.Cursor[Any]:
        encoded: dict[str, Any] = {"namespace": self._namespace}
        encoded.update({k: _encode(v) for k, v in params.items()})
        encoded.update(self._bound_now)
        return (cursor or self._cursor).execute(self._queries[query], encoded)

    def one(self, query: str, /, **params: Any) -> Any:
        """First row of `query`, or None (waits for everything sent before it)."""
        return self._execute(query, params).fetchone()

    def all(self, query: str, /, **params: Any) -> list[Any]:
        """All rows of `query` (waits for everything sent before it)."""
        return self._execute(query, params).fetchall()

    def run(self, query: str, /, **params: Any) -> int:
        """Rows changed by statement `query` (waits for everything sent before it)."""
        cursor = self._execute(query, params)
        self._pipeline.sync()
        return cursor.rowcount

    def send(self, query: str, /, **params: Any) -> _Pending:
        """Queue `query` in the pipeline; it travels with the next statement waited for."""
        cursor = self._execute(query, params, self._conn.cursor(row_factory=_row_factory))
        return _Pending(cursor, self._pipeline)

    def send_rows(
        self,
        query: str,
        rows: list[dict[str, Any]],
        /,
        json_columns: tuple[str, ...] = (),
        **params: Any,
    ) -> None:
        """Queue `query` once, with every row in the JSON array parameter `rows` (where the
        JSON columns are JSON already)."""
        self.send(query, rows=Json(rows), **params)


class _Pending:
    """A statement in the pipeline, on a cursor of its own that its results arrive on."""

    __slots__ = ("_cursor", "_pipeline")

    def __init__(self, cursor: psycopg.Cursor[Any], pipeline: psycopg.Pipeline) -> None:
        self._cursor, self._pipeline = cursor, pipeline

    def one(self) -> Any:
        """Its first row, or None."""
        return self._cursor.fetchone()

    def all(self) -> list[Any]:
        """All its rows."""
        return self._cursor.fetchall()

    def count(self) -> int:
        """Rows it changed."""
        self._pipeline.sync()
        return self._cursor.rowcount


# Every connection's adapters: timestamptz past the calendar reads as its edge.
_CONTEXT = instants.adapters()


def _utc(value: datetime) -> datetime:
    return value if value.tzinfo is UTC else value.astimezone(UTC)


class PostgresDriver:
    """A pool of connections to one PostgreSQL database (and schema)."""

    dialect = "postgresql"
    # The exchange is one call of a function of the schema (postgres/exchange.py).
    exchange_on_server = True

    def __init__(self, url: str, clock: Clock | None, *, migrate: bool = True) -> None:
        self.url = url
        self._shown = safe_url(url)
        self._clock = clock
        self._write_sql, self._read_sql = compile_queries(server_clock=clock is None)
        self._conninfo = _conninfo(url)
        _need_pipeline_mode()
        with self._connect() as conn:  # the first connection reports what is wrong, at once
            current, latest = self._versions(conn)
            if current > latest:
                raise self._too_new(current, latest)
            if migrate and current < latest:
                self._migrate_on(conn)
        self._pool = self._open_pool()

    # -- connections ---------------------------------------------------------------

    def _connect(self) -> psycopg.Connection[Any]:

        try:
            return psycopg.connect(self._conninfo, autocommit=True, context=_CONTEXT)
        except psycopg.Error as exc:
            raise StoreError(describe(self.url, exc)) from None

    def _open_pool(self) -> ConnectionPool:

        # The pool logs every failed reconnection over several lines; the driver reports
        # an unreachable server itself, once per operation, as a StoreError.
        logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
        # Leaving pipeline mode on a lost connection logs a warning besides raising; the
        # driver reports the loss itself, as that operation's StoreError.
        logging.getLogger("psycopg").addFilter(_not_pipeline_exit)

        pool: ConnectionPool = ConnectionPool(
            self._conninfo,
            kwargs={"autocommit": True, "context": _CONTEXT},
            min_size=1,
            max_size=POOL_MAX,
            timeout=POOL_WAIT_S,
            reconnect_timeout=0,  # a failed connection try is not retried later by the pool
            name="corral",
            open=False,
        )
        pool.open(wait=False)
        return pool

    @contextmanager
    def _session(self) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection for one transaction; rolled back and given back on any error,
        a driver error leaving as StoreError."""

        try:
            conn = self._checkout()
        except PoolTimeout:
            raise StoreError(
                f"database {self._shown}: no connection within {POOL_WAIT_S:g} s "
                "(is the server running?)"
            ) from None
        try:
            yield conn
        except psycopg.Error as exc:
            self._abort(conn)
            raise StoreError(describe(self.url, exc)) from None
        except BaseException:
            self._abort(conn)
            raise
        self._pool.putconn(conn)

    @contextmanager
    def _transaction(
        self, begin: bytes, queries: dict[str, bytes], namespace: str
    ) -> Iterator[_Tx]:

        with self._session() as conn, conn.pipeline() as pipeline:
            now = None if self._clock is None else self._clock.now()
            tx = _Tx(conn, pipeline, queries, now, namespace)
            tx._cursor.execute(begin)
            try:
                yield tx
                tx._cursor.execute(b"COMMIT")
                pipeline.sync()
            except BaseException:
                with contextlib.suppress(psycopg.Error):  # what was sent, collected
                    pipeline.sync()
                raise

    def _checkout(self) -> psycopg.Connection[Any]:
        """A pooled connection the server has not hung up on (a restart); others discarded.

        BEGIN travels with the first statement, so a dead connection must be known before:
        a server ending a session sends its reason (or EOF) first, and an idle pooled
        connection has nothing else to read, so anything readable marks it as lost.
        """
        for _ in range(POOL_MAX + 1):
            conn = self._wait_for_connection()
            if not conn.closed and not select.select([conn.fileno()], [], [], 0)[0]:
                return conn
            conn.close()
            self._pool.putconn(conn)  # closed: the pool opens another in its place
        raise StoreError(f"database {self._shown}: every connection was lost")

    def _wait_for_connection(self) -> psycopg.Connection[Any]:
        """A pooled connection within POOL_WAIT_S (PoolTimeout if none), asking the pool
        every POOL_ASK_S, so that it tries to connect again each time while the server is out."""
        for _ in range(round(POOL_WAIT_S / POOL_ASK_S) - 1):
            with contextlib.suppress(PoolTimeout):
                return self._pool.getconn(timeout=POOL_ASK_S)
        return self._pool.getconn(timeout=POOL_ASK_S)

    def _abort(self, conn: psycopg.Connection[Any]) -> None:
        """Roll back, once out of pipeline mode, and give the connection back."""

        with contextlib.suppress(psycopg.Error):  # gone: the pool discards it below
            if not conn.closed:
                conn.execute("ROLLBACK")
        self._pool.putconn(conn)

    def read(self, namespace: str = DEFAULT_NAMESPACE) -> Any:
        """One consistent snapshot; the queries run without their locking clauses."""
        begin = b"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        return self._transaction(begin, self._read_sql, namespace)

    def write(self, namespace: str = DEFAULT_NAMESPACE) -> Any:
        """A READ COMMITTED transaction whose deciding reads lock (see the module doc)."""
        return self._transaction(b"BEGIN", self._write_sql, namespace)

    def call(self, query: str, /, **params: Any) -> Any:
        """Run statement `query` as a transaction of its own (autocommit: one round trip,
        no BEGIN or COMMIT, and no pipeline, whose bookkeeping costs the client more than
        the round trips it saves); its rows."""
        encoded: dict[str, Any] = {"namespace": DEFAULT_NAMESPACE}
        encoded.update({k: _encode(v) for k, v in params.items()})
        if self._clock is not None:
            encoded["now"] = self._clock.now()
        with self._session() as conn:
            cursor = conn.cursor(row_factory=_row_factory)
            cursor.execute(self._write_sql[query], encoded)
            returns_rows = cursor.pgresult is not None and cursor.pgresult.nfields > 0
            return cursor.fetchall() if returns_rows else []

    # -- clock and decoding --------------------------------------------------------

    def now(self) -> datetime:
        """The store's clock: the server's now(), or the injected test clock."""
        if self._clock is not None:
            return self._clock.now()
        with self.read() as tx:
            instant: datetime = tx.now
            return instant

    def instant(self, value: Any) -> datetime:
        """A timestamptz, in UTC."""
        return _utc(value)

    def json(self, value: Any) -> Any:
        """jsonb and text[] arrive decoded."""
        return value

    # -- schema --------------------------------------------------------------------

    def _versions(self, conn: psycopg.Connection[Any]) -> tuple[int, int]:

        latest = migration_files("postgresql")[-1][0]
        try:
            row = conn.execute("SELECT to_regclass('corral_migrations') IS NOT NULL").fetchone()
            if row is None or not row[0]:
                return 0, latest
            found = conn.execute("SELECT coalesce(max(version), 0) FROM corral_migrations")
            version = found.fetchone()
        except psycopg.Error as exc:
            raise StoreError(describe(self.url, exc)) from None
        return (int(version[0]) if version else 0), latest

    def schema_version(self) -> tuple[int, int]:
        """(the highest migration applied to this database, the newest this code has)."""
        with self._pool.connection() as conn:
            return self._versions(conn)

    def migrate(self) -> list[int]:
        """Apply the pending migrations; the versions applied (none if up to date)."""
        with self._connect() as conn:
            return self._migrate_on(conn)

    def _migrate_on(self, conn: psycopg.Connection[Any]) -> list[int]:

        try:
            with conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtext(%s), hashtext(current_schema()))",
                    (MIGRATION_LOCK,),
                )
                conn.execute(_VERSION_TABLE)
                current, latest = self._versions(conn)
                if current > latest:
                    raise self._too_new(current, latest)
                return self._apply(conn, current, latest)
        except psycopg.Error as exc:
            raise StoreError(describe(self.url, exc)) from None

    def _apply(self, conn: psycopg.Connection[Any], current: int, latest: int) -> list[int]:
        if current == latest:
            return []
        steps = [
            (version, path) for version, path in migration_files("postgresql") if version > current
        ]
        if current == 0:  # a new database gets the schema whole
            steps = [(latest, sql_path("postgresql", "schema.sql"))]
        # The functions follow, whichever road: one text for every version (functions.sql).
        steps.append((latest, sql_path("postgresql", "functions.sql")))
        for _, path in steps:
            conn.execute(read_sql_file(path).encode())
        applied = list(range(current + 1, latest + 1))
        for version in applied:
            conn.execute("INSERT INTO corral_migrations (version) VALUES (%s)", (version,))
        return applied

    def _too_new(self, current: int, latest: int) -> SchemaTooNew:
        return SchemaTooNew(
            f"database {self._shown} has schema version {current}, newer than this "
            f"corral knows ({latest}): upgrade corral"
        )

    # -- sessions of their own (store/postgres/connections.py) -------------------------------

    def wake_on_work(self, wake: threading.Event) -> Callable[[], None]:
        """Set `wake` whenever a task becomes ready (LISTEN); the function that stops it."""
        return Listener(self._connect, self._write_sql["listen_ready"], wake).stop

    def wake_on_events(self, wake: threading.Event) -> Callable[[], None]:
        """Set `wake` whenever events are committed (LISTEN); the function that stops it."""
        listen, leave = self._write_sql["listen_events"], self._write_sql["leave_events"]
        return FollowerListener(self._connect, listen, wake, leave).stop

    def leader_lock(self) -> LeaderLock:
        """The advisory lock the orchestrators of this store elect their leader with."""
        return LeaderLock(
            self._connect,
            self._write_sql["try_leader_lock"],
            self._write_sql["release_leader_lock"],
        )

    def close(self) -> None:
        """Close every pooled connection."""
        self._pool.close()


def _need_pipeline_mode() -> None:
    """Refuse, in one line, a psycopg whose libpq is too old for pipeline mode."""

    if not psycopg.Pipeline.is_supported():
        raise StoreError(
            f"psycopg uses libpq {psycopg.pq.version() // 10000}; corral needs libpq 14 or newer "
            "(pip install 'psycopg[binary]' brings one)"
        )


def _not_pipeline_exit(record: logging.LogRecord) -> bool:
    """False for psycopg's warning on leaving a pipeline whose connection is lost."""
    return not str(record.msg).startswith("error ignored terminating")


def _conninfo(url: str) -> str:
    """`url` with the session settings corral relies on: UTC, a connect timeout, no stuck locks."""

    try:
        params = conninfo_to_dict(url)
    except psycopg.Error as exc:
        raise StoreError(describe(url, exc)) from None
    # A process stopped (not killed) inside a transaction would hold its row locks for
    # good; the server ends such a session after a minute and the locks with it.
    session = "-c TimeZone=UTC -c idle_in_transaction_session_timeout=60000"
    options = " ".join(filter(None, [str(params.pop("options", "") or ""), session]))
    params.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
    params.setdefault("application_name", "corral")
    return make_conninfo("", **{**params, "options": options})
