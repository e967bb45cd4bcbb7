"""`corral db status` / `db migrate` on both stores, the CLI on PostgreSQL, and bad URLs.

A bad URL, a refused connection, wrong credentials and a database the user may not
create tables in each give one line on stderr and exit code 3 (store unavailable).
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import secrets
import sqlite3
from pathlib import Path

import psycopg
import pytest

from corral.store.queries import migration_files

LATEST = migration_files("sqlite")[-1][0]
STORE_UNAVAILABLE = 3


def _after(dialect: str, version: int) -> list[tuple[int, str]]:
    """(version, name) of the migrations of `dialect` newer than `version`."""
    return [(v, Path(path).stem) for v, path in migration_files(dialect) if v > version]


def _old_sqlite(path: Path) -> str:
    """A SQLite store at schema version 1."""
    conn = sqlite3.connect(path)
    conn.executescript(Path(migration_files("sqlite")[0][1]).read_text(encoding="utf-8"))
    conn.execute("PRAGMA user_version = 1")
    conn.close()
    return str(path)


def test_db_status_shows_pending_migrations_and_db_migrate_applies_them(cli, tmp_path):
    """An old SQLite store: status lists what is pending, migrate applies it, status is clean."""
    db = _old_sqlite(tmp_path / "old.db")
    before = cli("db", "status", "--json", env={"CORRAL_DB": db})
    migrated = cli("db", "migrate", env={"CORRAL_DB": db})
    after = cli("db", "status", env={"CORRAL_DB": db})

    assert (0, "") == (before.code, before.err)
    status = json.loads(before.out)
    assert ("sqlite", 1, LATEST) == (
        status["dialect"],
        status["schema_version"],
        status["latest_version"],
    )
    pending = _after("sqlite", 1)
    assert [{"version": v, "name": name} for v, name in pending] == status["pending"]
    names = ", ".join(name for _, name in pending)
    assert (0, f"applied {names}; schema v{LATEST}\n") == (migrated.code, migrated.out)
    assert after.out.endswith(f"schema v{LATEST} of v{LATEST}, up to date\n")


def test_db_status_of_a_missing_sqlite_file_creates_nothing(cli, tmp_path):
    """`db status` on a path with no database says so (exit 3) and leaves no file behind."""
    missing = tmp_path / "missing.db"
    result = cli("db", "status", env={"CORRAL_DB": str(missing)})
    assert (STORE_UNAVAILABLE, 1) == (result.code, len(result.err.splitlines()))
    assert "does not exist" in result.err
    assert not missing.exists()


def test_db_commands_refuse_a_remote_store_in_one_line(cli):
    """`db status` and `db migrate` on an http:// store are bad input (exit 2), sent nowhere."""
    remote = {"CORRAL_DB": "http://127.0.0.1:9", "CORRAL_TOKEN": "corral_x"}
    for command in ("status", "migrate"):
        done = cli("db", command, env=remote)
        assert (2, 1) == (done.code, len(done.err.splitlines()))
        assert "db: expected a local store: `corral db` runs on the store's host" in done.err


def test_db_commands_on_postgresql(cli, pg_url):
    """A new PostgreSQL schema: everything pending; migrate applies it; a second does nothing."""
    env = {"CORRAL_DB": pg_url}
    before = json.loads(cli("db", "status", "--json", env=env).out)
    first = cli("db", "migrate", "--json", env=env)
    second = cli("db", "migrate", env=env)
    after = json.loads(cli("db", "status", "--json", env=env).out)

    everything = _after("postgresql", 0)
    assert (0, [v for v, _ in everything]) == (
        before["schema_version"],
        [p["version"] for p in before["pending"]],
    )
    assert [name for _, name in everything] == json.loads(first.out)["applied"]
    assert f"schema v{LATEST}: nothing to apply\n" == second.out
    assert ("postgresql", LATEST, []) == (
        after["dialect"],
        after["schema_version"],
        after["pending"],
    )


def test_a_task_goes_through_the_cli_on_postgresql(cli, pg_url):
    """init, add, register, claim:next, done and show against a postgresql:// store."""
    env = {"CORRAL_DB": pg_url}
    init = cli("init", env=env)
    task = cli("add", "Fix the login bug", "--kind", "code", env=env).out.strip()
    worker = json.loads(cli("worker", "register", "--name", "w1", "--json", env=env).out)["id"]
    claim = json.loads(cli("claim:next", worker, "--json", env=env).out)
    done = cli("done", task, "--token", str(claim["token"]), "--result", '{"pr": 17}', env=env)
    shown = json.loads(cli("show", task, "--json", env=env).out)

    assert (0, "") == (init.code, init.err)
    assert init.out.startswith("corral store ready at postgresql://")
    assert task == claim["task_id"]
    assert (0, f"{task} done\n") == (done.code, done.out)
    assert ("done", {"pr": 17}, 1) == (shown["status"], shown["result"], shown["attempts"])


def _fails_in_one_line(cli, url: str, *args: str) -> str:
    result = cli(*(args or ("list",)), env={"CORRAL_DB": url})
    assert (STORE_UNAVAILABLE, "") == (result.code, result.out)
    assert 1 == len(result.err.splitlines()), result.err
    assert "Traceback" not in result.err
    return result.err


@pytest.mark.usefixtures("pg_database")
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql://postgres@127.0.0.1:notaport/x", "not a valid PostgreSQL URL"),
        ("postgresql://postgres@127.0.0.1/x?nosuchoption=1", "not a valid PostgreSQL URL"),
        ("postgresql://postgres@127.0.0.1:1/x", "Connection refused"),
    ],
)
def test_a_bad_url_or_a_refused_connection_is_one_line(cli, url, expected):
    """A malformed URL or a port nobody listens on: exit 3, one line saying which."""
    assert expected in _fails_in_one_line(cli, url)


def test_wrong_credentials_are_one_line_without_the_password(cli, pg_database):
    """An unknown user (the server trusts known ones): exit 3, one line, the password hidden."""
    user = f"nobody_{secrets.token_hex(3)}"
    url = pg_database.replace("postgres@", f"{user}:hunter2@")
    err = _fails_in_one_line(cli, url)
    assert f'role "{user}" does not exist' in err
    assert "hunter2" not in err
    assert f"{user}:***@" in err


@pytest.fixture
def read_only_url(pg_database: str, pg_url: str) -> object:
    """A login role that may use a fresh schema but not create tables in it, and its URL."""
    role = f"corral_ro_{secrets.token_hex(3)}"
    schema = pg_url.rsplit("%3D", 1)[1]
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {role} LOGIN")
        conn.execute(f"GRANT USAGE ON SCHEMA {schema} TO {role}")
    yield pg_url.replace("postgres@", f"{role}@")
    with psycopg.connect(pg_database, autocommit=True) as conn:
        conn.execute(f"DROP OWNED BY {role}")
        conn.execute(f"DROP ROLE {role}")


def test_a_database_without_permission_to_create_tables_is_one_line(cli, read_only_url, pg_url):
    """`init` as a user who may not create tables: exit 3, one line, nothing created."""
    err = _fails_in_one_line(cli, read_only_url, "init")
    assert "permission denied for schema" in err
    assert "grant it CREATE, or migrate as the owner" in err
    with psycopg.connect(pg_url) as conn:
        count = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchone()
    assert (0,) == count
