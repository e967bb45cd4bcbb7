"""The SQL files agree with each other and with the store code (STYLE.md habit 1).

- The numbered migrations, applied in order, build the same schema as `schema.sql`.
- Every query name the store runs is defined in `queries.sql`, and every defined one is run.
- Task queries guarded by `:allowed` are handed their state set from `tasks.ALLOWED_FROM`,
  the one copy of the transition table.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import ast
import os
import re
import sqlite3
from pathlib import Path

import pytest

from corral import open_store
from corral.model.runs import RunOutcome
from corral.model.states import ALLOWED_FROM, TaskStatus
from corral.store import claimable
from corral.store.queries import (
    SQL_DIR,
    load_fragments,
    load_queries,
    migration_files,
    read_sql_file,
    sql_path,
)

STORE_SRC = Path(__file__).resolve().parents[2] / "src" / "corral" / "store"
TX_METHODS = {"one", "all", "run", "send", "send_rows"}
DIALECTS = sorted(os.listdir(SQL_DIR))

# Task queries that change a task's status without taking :allowed, each with its reason.
LITERAL_GUARDS = {
    # The claim queries filter on `status = 'ready'` literally (the `claimable` fragment)
    # so that SQLite can walk its claim-order index; test_claim_literal_agrees_with_the_table
    # ties it to ALLOWED_FROM["claim"]. PostgreSQL claims inside corral_exchange
    # (test_every_task_status_update_of_the_functions_is_guarded).
    "sqlite": {"claim_tasks": "status = 'ready'", "claim_task": "status = 'ready'"},
    "postgresql": {},
}

# Queries only PostgreSQL has: five run on a session of its own (store/postgres/connections.py),
# and SQLite's driver has nothing to listen to and one orchestrator, so it needs neither;
# two call the claim cycle's server-side functions (store/postgres/cycle.py), whose steps
# SQLite runs as the queries both dialects share.
POSTGRESQL_ONLY = {
    "listen_ready",
    "listen_events",
    "leave_events",
    "try_leader_lock",
    "release_leader_lock",
    "exchange_on_server",
    "describe_runs",
}
# Queries only SQLite has: the steps of the exchange (store/exchange.py), which PostgreSQL
# runs as one function instead (functions.sql, corral_exchange; store/postgres/exchange.py).
SQLITE_ONLY = {
    "claim_tasks",
    "claim_task",
    "any_queue_limits",
    "provider_allowance",
    "dependencies_of",
    "insert_claim",
    "insert_claims",
    "record_claimed",
    "insert_runs",
    "insert_alike_runs",
    "end_reported_claim",
    "end_claims",
    "complete_tasks",
    "complete_task",
    "record_finished",
    "finish_runs",
    "finish_plain_runs",
    "finish_stale_runs",
    "run_outcomes",
    "defer_task",
    "wait_task",
}


def _objects(conn: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return sorted((kind, name, table, _normalise(sql)) for kind, name, table, sql in rows)


def _normalise(sql: str | None) -> str:
    """SQL text without comments and with single spaces, as sqlite_master keeps it verbatim."""
    if sql is None:  # automatic indexes (UNIQUE, PRIMARY KEY) have no SQL
        return ""
    without_comments = re.sub(r"--[^\n]*", "", sql)
    # ALTER TABLE ADD COLUMN appends ", column" after the last line: " ," is ",".
    spaced = " ".join(without_comments.split())
    return spaced.replace("( ", "(").replace(" )", ")").replace(" ,", ",")


def _apply(paths: list[str]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    for path in paths:
        conn.executescript(Path(path).read_text(encoding="utf-8"))
    return conn


def _runs_a_query(call: ast.Call) -> bool:
    """`tx.one`, `tx.all`, `tx.run`, `tx.send`, `tx.send_rows`, or `driver.call` (a
    statement on its own)."""
    func = call.func
    if not isinstance(func, ast.Attribute):
        return False
    receiver = func.value
    if func.attr in TX_METHODS:
        return isinstance(receiver, ast.Name) and receiver.id == "tx"
    return func.attr == "call" and (
        (isinstance(receiver, ast.Name) and receiver.id == "driver")
        or (isinstance(receiver, ast.Attribute) and receiver.attr == "_driver")
    )


def _store_calls() -> list[ast.Call]:
    """Every call that runs a named query in the store's Python code (`_runs_a_query`)."""
    calls = []
    for path in sorted(STORE_SRC.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and _runs_a_query(node):
                calls.append(node)
    return calls


def _query_name(call: ast.Call) -> str:
    first = call.args[0] if call.args else None
    if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
        raise AssertionError(f"line {call.lineno}: query name is not a string literal")
    return first.value


def _session_queries() -> set[str]:
    """Names the PostgreSQL driver runs on sessions of its own: `self._write_sql["NAME"]`."""
    tree = ast.parse((STORE_SRC / "postgres" / "driver.py").read_text(encoding="utf-8"))
    return {
        node.slice.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "_write_sql"
        and isinstance(node.slice, ast.Constant)
    }


def _used_names() -> set[str]:
    return {_query_name(call) for call in _store_calls()} | _session_queries()


def test_sqlite_migrations_in_order_build_the_same_schema_as_schema_sql():
    """Applying migrations/0001.. in order to an empty database yields schema.sql's objects."""
    migrated = _apply([path for _, path in migration_files("sqlite")])
    fresh = _apply([sql_path("sqlite", "schema.sql")])
    try:
        assert _objects(fresh) == _objects(migrated)
    finally:
        migrated.close()
        fresh.close()


# What PostgreSQL's catalog says of every object in one schema, in a schema-free form.
PG_CATALOG = {
    "column": """SELECT table_name, column_name, data_type, is_nullable, column_default,
                        is_identity FROM information_schema.columns WHERE table_schema = %s""",
    "constraint": """SELECT conrelid::regclass::text, conname, pg_get_constraintdef(c.oid)
                     FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
                     WHERE n.nspname = %s""",
    "index": "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s",
    "view": "SELECT viewname, definition FROM pg_views WHERE schemaname = %s",
    "trigger": """SELECT t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t
                  JOIN pg_class r ON r.oid = t.tgrelid JOIN pg_namespace n
                  ON n.oid = r.relnamespace WHERE n.nspname = %s AND NOT t.tgisinternal""",
    "function": """SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n
                   ON n.oid = p.pronamespace WHERE n.nspname = %s""",
}


def _pg_objects(url: str) -> dict[str, list[tuple[str, ...]]]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        schema = conn.execute("SELECT current_schema()").fetchone()[0]
        return {
            kind: sorted(
                tuple(str(v).replace(f"{schema}.", "") for v in row)
                for row in conn.execute(query, (schema,)).fetchall()
            )
            for kind, query in PG_CATALOG.items()
        }


def _pg_apply(url: str, paths: list[str]) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for path in paths:
            conn.execute(read_sql_file(path).encode())


def test_postgresql_migrations_in_order_build_the_same_schema_as_schema_sql(pg_schema):
    """Migrations applied in order and schema.sql leave the same objects in the catalog."""
    (migrated, drop_migrated), (fresh, drop_fresh) = pg_schema(), pg_schema()
    try:
        functions = sql_path("postgresql", "functions.sql")  # applied last on either road
        _pg_apply(migrated, [*(path for _, path in migration_files("postgresql")), functions])
        _pg_apply(fresh, [sql_path("postgresql", "schema.sql"), functions])
        found = _pg_objects(fresh)
        assert all(found[kind] for kind in PG_CATALOG), found
        assert found == _pg_objects(migrated)
    finally:
        drop_migrated()
        drop_fresh()


@pytest.mark.parametrize("dialect", DIALECTS)
def test_migrations_are_numbered_from_one_without_gaps(dialect):
    """Migration versions run 1, 2, ... so user_version names exactly which ones applied."""
    versions = [version for version, _ in migration_files(dialect)]
    assert list(range(1, len(versions) + 1)) == versions


def test_the_store_code_names_query_names_by_literal():
    """The store's tx calls were found and each names its query with a string literal."""
    calls = _store_calls()
    assert calls, "no tx.one/tx.all/tx.run calls found in src/corral/store"
    assert len(calls) == len([_query_name(call) for call in calls])


@pytest.mark.parametrize("dialect", DIALECTS)
def test_every_query_the_store_runs_is_defined(dialect):
    """Every query name passed to tx.one/tx.all/tx.run exists in queries.sql."""
    wanted = _used_names() - (POSTGRESQL_ONLY if dialect == "sqlite" else SQLITE_ONLY)
    assert set() == wanted - set(load_queries(dialect))


@pytest.mark.parametrize("dialect", DIALECTS)
def test_queries_sql_defines_no_unused_query(dialect):
    """queries.sql holds no query the store never runs."""
    assert set() == set(load_queries(dialect)) - _used_names()


def test_every_dialect_defines_the_same_query_names():
    """The SQLite and PostgreSQL files define one set of names, but each one's own."""
    own = POSTGRESQL_ONLY | SQLITE_ONLY
    names = {dialect: sorted(set(load_queries(dialect)) - own) for dialect in DIALECTS}
    assert {dialect: names[DIALECTS[0]] for dialect in DIALECTS} == names


def _update_of_tasks(sql: str) -> str | None:
    """The `UPDATE tasks ...` statement of a query (after any WITH clause), or None."""
    statement = re.search(r"^(?:WITH\b.*?\)\s*)?(UPDATE\s+tasks\b.*)", _normalise(sql), re.S)
    return statement.group(1) if statement else None


def _task_status_updates(dialect: str) -> dict[str, str]:
    """Queries that update the tasks table's status column, name -> the UPDATE statement."""
    updates = {name: _update_of_tasks(sql) for name, sql in load_queries(dialect).items()}
    return {
        name: sql
        for name, sql in updates.items()
        if sql is not None and re.search(r"\bstatus\s*=", sql.split("WHERE")[0])
    }


@pytest.mark.parametrize("dialect", DIALECTS)
def test_task_status_updates_are_guarded_by_the_transition_table(dialect):
    """Every UPDATE of a task's status takes :allowed, or is a listed literal guard."""
    updates = _task_status_updates(dialect)
    unguarded = {name for name, sql in updates.items() if ":allowed" not in sql}
    assert set(LITERAL_GUARDS[dialect]) == unguarded
    for name, guard in LITERAL_GUARDS[dialect].items():
        assert guard in updates[name]


def test_every_task_status_update_of_the_functions_is_guarded():
    """Each UPDATE of tasks in functions.sql takes its allowed states from the store's
    parameter (from ALLOWED_FROM), or claims through corral_may_claim (`status = 'ready'`)."""
    text = _normalise(Path(sql_path("postgresql", "functions.sql")).read_text(encoding="utf-8"))
    updates = re.findall(r"UPDATE tasks t SET status = .*?(?:;|RETURNING)", text)
    assert 8 == len(updates)  # complete, unblock, two claims, fail, defer, wait, release
    for update in updates:
        where = update.split(" WHERE ", 1)[1]
        assert re.search(
            r"t\.status = ANY\(p_(complete|fail|defer|wait|release|unblock)\)", where
        ) or ("corral_may_claim(" in where), update


def test_claim_literal_agrees_with_the_table():
    """The literal `status = 'ready'` in the claimable filter is what ALLOWED_FROM says of claim."""
    assert frozenset({TaskStatus.READY}) == ALLOWED_FROM["claim"]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_allowed_task_states_come_from_allowed_from(dialect):
    """The store hands every :allowed task query a value of ALLOWED_FROM[...]."""
    guarded = {
        name
        for name, sql in load_queries(dialect).items()
        if ":allowed" in sql and _update_of_tasks(sql) is not None
    }
    seen = set()
    for call in _store_calls():
        name = _query_name(call)
        if name not in guarded:
            continue
        seen.add(name)
        allowed = [kw.value for kw in call.keywords if kw.arg == "allowed"]
        assert [True] == [
            isinstance(value, ast.Subscript)
            and isinstance(value.value, ast.Name)
            and value.value.id == "ALLOWED_FROM"
            for value in allowed
        ], f"line {call.lineno}: {name} must get allowed=ALLOWED_FROM[...]"
    assert guarded == seen


def test_allowed_from_keys_name_real_transitions():
    """Every action in ALLOWED_FROM starts from at least one state, all of them task states."""
    assert all(states and states <= set(TaskStatus) for states in ALLOWED_FROM.values())


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_schemas_run_outcomes_are_run_outcome(dialect):
    """The CHECK on runs.outcome lists exactly the values of corral.model.runs.RunOutcome."""
    schema = Path(sql_path(dialect, "schema.sql")).read_text(encoding="utf-8")
    check = re.search(r"outcome\s+TEXT\s+CHECK \(outcome IN \(([^)]*)\)\)", schema, re.I)
    assert check is not None
    assert sorted(RunOutcome) == sorted(re.findall(r"'(\w+)'", check.group(1)))


def test_sqlite_refuses_any_change_to_a_finished_run():
    """The trigger keeps a finished run immutable even for an UPDATE without the guard."""
    conn = _apply([sql_path("sqlite", "schema.sql")])
    try:
        conn.execute(
            "INSERT INTO runs (id, task_id, worker_id, token, attempt, started_at, cwd) "
            "VALUES ('r-1', 't-1', 'w-1', 1, 1, 0, '/')"
        )
        conn.execute("UPDATE runs SET finished_at = 1, outcome = 'done' WHERE id = 'r-1'")
        with pytest.raises(sqlite3.IntegrityError, match="run is finished"):
            conn.execute("UPDATE runs SET error = 'rewritten' WHERE id = 'r-1'")
        assert [("done", None)] == conn.execute("SELECT outcome, error FROM runs").fetchall()
    finally:
        conn.close()


def test_an_older_database_is_migrated_on_open_and_keeps_its_rows(tmp_path):
    """A version-1 store with a task in it opens at the latest version with the task intact."""
    path = str(tmp_path / "v1.db")
    conn = _apply([migration_files("sqlite")[0][1]])
    conn.execute(
        "INSERT INTO tasks (id, title, queue, kind, status, max_attempts, retry_base_s,"
        " run_after, created_at, updated_at)"
        " VALUES ('t-fromv1', 'from version 1', 'default', 'default', 'ready', 3, 10, 0, 0, 0)"
    )
    conn.commit()
    conn.execute("PRAGMA user_version = 1")
    conn.execute(f"VACUUM INTO '{path}'")
    conn.close()
    with open_store(path) as store:
        assert (migration_files("sqlite")[-1][0],) * 2 == store.schema_version()
        assert "from version 1" == store.tasks.get_task("t-fromv1").title
        assert [] == store.runs.list_runs()


def test_postgresql_claims_next_with_skip_locked():
    """The exchange locks the next tasks it takes with FOR UPDATE SKIP LOCKED (issue 5)."""
    functions = Path(sql_path("postgresql", "functions.sql")).read_text(encoding="utf-8")
    assert "FOR UPDATE SKIP LOCKED" in functions


def test_the_claim_filter_is_written_once_per_dialect():
    """SQLite's claim statements include the `claimable` fragment; PostgreSQL's exchange and
    claimable_task call corral_may_claim, the one place its filter is applied."""
    sqlite = load_queries("sqlite")
    fragment = " ".join(load_fragments("sqlite")["claimable"].split())
    for name in ("claim_tasks", "claim_task", "claimable_task"):
        assert fragment in " ".join(sqlite[name].split()), name
    functions = read_sql_file(sql_path("postgresql", "functions.sql"))
    assert 2 == functions.count("corral_may_claim(c, ") + functions.count("corral_may_claim(t, ")
    assert "corral_may_claim(t, " in load_queries("postgresql")["claimable_task"]
    assert 1 == functions.count("t.assignee IS NULL")


def test_the_claim_filter_has_one_source_for_both_dialects():
    """No SQL file writes the claimable filter: the claim statements and functions name the
    fragments store/claimable.py makes from its one definition, and no SQL file of either
    dialect holds a clause of its own (the queue limits held back, a task kept at its site)."""
    sqlite_queries = Path(sql_path("sqlite", "queries.sql")).read_text(encoding="utf-8")
    functions = Path(sql_path("postgresql", "functions.sql")).read_text(encoding="utf-8")
    for text in (sqlite_queries, functions):
        for clause in ("l.rate <=", "FROM workers s"):
            assert clause not in text, clause
    assert 3 == sqlite_queries.count("/* fragment: claimable */")
    for name in claimable.fragments("postgresql"):
        assert 1 == functions.count(f"/* fragment: {name} */"), name


def test_postgresql_one_active_claim_is_a_partial_unique_index():
    """The schema itself refuses a second active claim on a task."""
    schema = Path(sql_path("postgresql", "schema.sql")).read_text(encoding="utf-8")
    assert (
        "CREATE UNIQUE INDEX claims_one_active_per_task ON claims (task_id) "
        "WHERE status = 'active';"
    ) in schema


def test_postgresql_read_transactions_run_the_queries_without_locks():
    """The read texts carry no locking clause; the deciding reads lock in write texts."""
    from corral.store.postgres.driver import compile_queries

    for server_clock in (True, False):
        write, read = compile_queries(server_clock=server_clock)
        assert [] == [
            name for name, sql in read.items() if re.search(rb"\bFOR (UPDATE|SHARE)", sql)
        ]
        for name in ("get_task", "active_claim", "claiming_worker", "task_statuses"):
            assert re.search(rb"\bFOR (UPDATE|SHARE)\b", write[name]), name
        assert (b"now()" in write["insert_event"]) is server_clock


# The queries of a claim + complete, which run while the write lock is held; each must
# seek its rows. Scans allowed: JSON parameters, a subquery's own rows, and the queue_limits
# table (one row per limited queue) that the claim's backpressure subquery reads.
CYCLE_QUERIES = (
    "claiming_worker",
    "claim_tasks",
    "claim_task",
    "insert_claims",
    "insert_alike_runs",
    "record_claimed",
    "worker_after_claim",
    "end_reported_claim",
    "end_claims",
    "complete_tasks",
    "complete_task",
    "finish_plain_runs",
    "record_finished",
    "note_reported",
)


def test_the_claim_cycle_seeks_and_never_scans_on_sqlite():
    """SQLite plans every query of a claim + complete without a table or index scan."""
    conn = _apply([sql_path("sqlite", "schema.sql")])
    queries = load_queries("sqlite")
    scans = {}
    try:
        for name in CYCLE_QUERIES:
            params = dict.fromkeys(re.findall(r":(\w+)", queries[name]))
            plan = conn.execute("EXPLAIN QUERY PLAN " + queries[name], params).fetchall()
            found = [
                detail
                for *_, detail in plan
                if detail.startswith("SCAN")
                and "json_each" not in detail
                and "VIRTUAL TABLE" not in detail  # a JSON parameter, json_each(:x) AS j
                and not detail.startswith("SCAN (subquery")  # the statement's own rows
                and detail != "SCAN l"
            ]
            if found:
                scans[name] = found
    finally:
        conn.close()
    assert {} == scans


def test_the_watch_screen_reads_running_tasks_through_the_active_claims_only():
    """`running_tasks` walks the partial index of active claims, not every claim ever made,
    and reads the tasks and runs of the oldest by key (bench/status_watch.py: 15 ms at
    100,000 done tasks when SQLite walked claims_by_start for the ORDER BY)."""
    conn = _apply([sql_path("sqlite", "schema.sql")])
    try:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN " + load_queries("sqlite")["running_tasks"],
            {"limit": 50, "namespace": "default"},
        ).fetchall()
    finally:
        conn.close()
    details = [detail for *_, detail in plan]
    assert ["SCAN claims USING INDEX claims_one_active_per_task", "SCAN c"] == [
        d
        for d in details
        if d.startswith("SCAN")  # `c`: the oldest claims, already chosen
    ]


def test_the_watch_screen_reads_where_work_ended_through_the_outcome_index():
    """`work_counts_since`, `newest_landed` and `oldest_kept` search reviews_by_outcome (no
    scan, no sort of every review), so the WORK section costs the same however many tasks
    ever landed (bench/status_watch.py)."""
    conn = _apply([sql_path("sqlite", "schema.sql")])
    queries = load_queries("sqlite")
    try:
        plans = {
            name: [
                detail
                for *_, detail in conn.execute(
                    "EXPLAIN QUERY PLAN " + queries[name],
                    {"since": 0.0, "limit": 50, "namespace": "default"},
                ).fetchall()
            ]
            for name in ("work_counts_since", "newest_landed", "oldest_kept")
        }
    finally:
        conn.close()
    for name, details in plans.items():
        assert [] == [d for d in details if d.startswith("SCAN") or "TEMP B-TREE" in d], name
        assert any("reviews_by_outcome" in d for d in details), name


def test_queue_stats_counts_the_last_minutes_claims_from_their_start():
    """`queue_stats` finds the last minute's claims by claims_by_start, not by walking every
    task of the namespace (90 ms at 100,000 done tasks, bench/status_watch.py)."""
    conn = _apply([sql_path("sqlite", "schema.sql")])
    try:
        plan = conn.execute(
            "EXPLAIN QUERY PLAN " + load_queries("sqlite")["queue_stats"],
            {"namespace": "default", "now": 0.0, "queue": None},
        ).fetchall()
    finally:
        conn.close()
    details = [detail for *_, detail in plan]
    assert "SEARCH c USING INDEX claims_by_start (claimed_at>?)" in details
    assert "SEARCH t USING INDEX tasks_claim_order (namespace=?)" not in details
