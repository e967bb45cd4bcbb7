"""What only the PostgreSQL store does: the server's clock, its migrations, its lock order."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import subprocess
import sys
import threading
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest

import corral
from corral import NewTask, NewWorker, SchemaTooNew, Settings, StoreError, open_store
from corral.model.messages import NewMessage
from corral.store.queries import migration_files

LATEST = migration_files("postgresql")[-1][0]


def _server_now(url: str) -> object:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT now()").fetchone()[0]  # type: ignore[index]


def test_without_a_test_clock_times_come_from_the_server(pg_url):
    """Creation and lease times are the server's now(), one instant per transaction."""
    with open_store(pg_url) as store:
        before = _server_now(pg_url)
        task = corral.enqueue(store, NewTask(title="t"))
        worker = corral.register(store, NewWorker(name="w")).worker
        claim = corral.claim(store, task.id, worker.id, lease_s=30.0)
        after = _server_now(pg_url)
        created = [e.at for e in store.events.list_events(corral.EventFilter(task_id=task.id))]

    assert before <= task.created_at <= after
    assert task.created_at == task.updated_at == created[0]
    assert before <= claim.claimed_at <= after
    assert claim.claimed_at + timedelta(seconds=30) == claim.lease_expires_at
    assert timedelta(0) == claim.claimed_at.utcoffset()


def test_store_now_is_the_server_clock(pg_url):
    """`store.now()` reads the server's clock, not the local one."""
    with open_store(pg_url) as store:
        before = _server_now(pg_url)
        now = store.now()
        assert before <= now <= _server_now(pg_url)


def _versions(url: str) -> list[int]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT version FROM corral_migrations ORDER BY version").fetchall()
    return [row[0] for row in rows]


def test_an_older_database_is_migrated_on_open_and_keeps_its_rows(pg_url):
    """A version-1 schema with a task in it opens at the latest version, the task intact."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(Path(migration_files("postgresql")[0][1]).read_bytes())
        conn.execute(
            "CREATE TABLE corral_migrations (version integer PRIMARY KEY,"
            " applied_at timestamptz NOT NULL DEFAULT now())"
        )
        conn.execute("INSERT INTO corral_migrations (version) VALUES (1)")
        conn.execute(
            "INSERT INTO tasks (id, title, queue, kind, status, max_attempts, retry_base_s,"
            " run_after, created_at, updated_at) VALUES ('t-fromv1', 'from version 1',"
            " 'default', 'default', 'ready', 3, 10, now(), now(), now())"
        )
    with open_store(pg_url, migrate=False) as store:
        assert [2, 3] == [version for version, _ in store.pending_migrations()][:2]
    with open_store(pg_url) as store:
        assert (LATEST, LATEST) == store.schema_version()
        assert "from version 1" == store.tasks.get_task("t-fromv1").title
        assert [] == store.runs.list_runs()
        assert [] == store.migrate()
    assert list(range(1, LATEST + 1)) == _versions(pg_url)


def test_version_8_counts_the_claims_workers_already_hold(pg_url):
    """Migration 8 starts each worker's active count at the claims it holds; the count then
    follows its claims and still bounds its capacity."""
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for _, path in migration_files("postgresql")[:7]:
            conn.execute(Path(path).read_bytes())
        conn.execute(
            "CREATE TABLE corral_migrations (version integer PRIMARY KEY,"
            " applied_at timestamptz NOT NULL DEFAULT now());"
            " INSERT INTO corral_migrations (version) SELECT generate_series(1, 7);"
            " INSERT INTO workers (id, name, hostname, status, registered_at, last_heartbeat_at)"
            " VALUES ('w-old', 'old', 'h', 'busy', now(), now());"
            " INSERT INTO tasks (id, title, queue, kind, status, attempts, max_attempts,"
            " retry_base_s, run_after, created_at, updated_at) VALUES ('t-held', 'held',"
            " 'default', 'default', 'running', 1, 3, 10, now(), now(), now()),"
            " ('t-next', 'next', 'default', 'default', 'ready', 0, 3, 10, now(), now(), now());"
            " INSERT INTO claims (task_id, worker_id, status, lease_s, claimed_at,"
            " lease_expires_at) VALUES ('t-held', 'w-old', 'active', 60, now(), now() + '1h')"
        )
    with open_store(pg_url) as store:
        assert 1 == store.workers.get_worker("w-old").active
        with pytest.raises(corral.WorkerUnavailable, match="at capacity \\(1 of 1 claims\\)"):
            corral.claim_next(store, "w-old")
        corral.complete(store, "t-held")
        assert (0, "idle") == (
            store.workers.get_worker("w-old").active,
            store.workers.get_worker("w-old").status,
        )
        assert "t-next" == corral.claim_next(store, "w-old").task_id  # type: ignore[union-attr]
        assert 1 == store.workers.get_worker("w-old").active


def test_a_database_newer_than_this_corral_is_refused(pg_url):
    """A schema version above the newest migration is refused before anything is written."""
    open_store(pg_url).close()
    with psycopg.connect(pg_url) as conn:
        conn.execute("INSERT INTO corral_migrations (version) VALUES (99)")
    with pytest.raises(SchemaTooNew, match="schema version 99"):
        open_store(pg_url)
    assert [*range(1, LATEST + 1), 99] == _versions(pg_url)


def test_a_store_opened_without_migrating_leaves_a_new_schema_empty(pg_url):
    """`migrate=False` (db status) reads the version and creates nothing."""
    with open_store(pg_url, migrate=False) as store:
        assert (0, LATEST) == store.schema_version()
        assert LATEST == len(store.pending_migrations())
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()"
        ).fetchone()
    assert (0,) == tables


def test_heartbeats_and_completions_of_one_worker_at_once_never_deadlock(pg_url):
    """A worker's heartbeat thread and its completing thread take locks in one order.

    Heartbeats extend the worker's claims and update its row while completions end a
    claim and update the same row; in opposite orders they would deadlock (and one of
    them fail with a StoreError) within a few hundred rounds.
    """
    settings = Settings(heartbeat_interval_s=1.0, lease_s=60.0)
    with open_store(pg_url) as store:
        worker = corral.register(store, NewWorker(name="w", max_concurrent=4), settings=settings)
        worker_id = worker.worker.id
        tasks = [corral.enqueue(store, NewTask(title=f"t{n}")).id for n in range(300)]
        errors: list[BaseException] = []
        stop = threading.Event()

        def beat() -> None:
            try:
                while not stop.is_set():
                    corral.heartbeat(store, worker_id, settings=settings)
            except BaseException as exc:
                errors.append(exc)

        beater = threading.Thread(target=beat)
        beater.start()
        try:
            for _ in tasks:
                claim = corral.claim_next(store, worker_id, settings=settings)
                assert claim is not None
                corral.complete(store, claim.task_id, token=claim.token)
        finally:
            stop.set()
            beater.join()
        assert [] == errors
        assert {"done"} == {store.tasks.get_task(t).status for t in tasks}


def test_a_failing_statement_rolls_back_and_leaves_a_one_line_store_error(pg_url):
    """A driver error leaves as StoreError (one line), and the connection stays usable."""
    with open_store(pg_url) as store:
        with pytest.raises(StoreError) as caught, store._driver.write() as tx:
            tx.run("insert_dependency", task_id="t-missing", depends_on="t-missing")
        assert "\n" not in caught.value.message
        assert "foreign key" in caught.value.message
        assert [] == store.tasks.list_tasks(corral.TaskFilter())


def test_connections_the_server_dropped_are_replaced_without_an_error(pg_url, pg_database):
    """After the server ends every pooled connection (as a restart does, waited for until
    they are gone), the next operations find fresh connections instead of failing."""
    with open_store(pg_url) as store:
        task = corral.enqueue(store, NewTask(title="t"))
        with psycopg.connect(pg_database, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
                " WHERE application_name = 'corral' AND datname = current_database()"
            )
        assert "t" == store.tasks.get_task(task.id).title
        assert 2 == len([corral.enqueue(store, NewTask(title=f"after {n}")) for n in range(2)])


def test_the_sqlite_command_line_never_imports_psycopg(tmp_path):
    """psycopg loads only for a postgresql:// URL: SQLite commands start as lean as before."""
    script = (
        "import sys\n"
        "from corral.cli.main import main\n"
        f"main(['--db', {str(tmp_path / 'c.db')!r}, 'init'])\n"
        f"main(['--db', {str(tmp_path / 'c.db')!r}, 'db', 'status'])\n"
        "print(sorted(m for m in sys.modules if m.startswith(('psycopg', 'corral.store.post'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    assert "[]" == done.stdout.splitlines()[-1]


def test_messages_are_sent_one_at_a_time_so_ids_appear_in_order(pg_url):
    """A sender waits while another's message is uncommitted: no reader following ids
    can see a later id before an earlier one commits."""
    from corral.store.postgres.driver import compile_queries

    insert = compile_queries(server_clock=True)[0]["insert_message"]
    params = {
        "sender": "a",
        "recipient": "orchestrator",
        "type": "note",
        "body": None,
        "namespace": "default",
        "key": None,
    }
    with open_store(pg_url) as store:
        store.messages.send_message(NewMessage(sender="x", recipient="orchestrator", type="note"))
    with psycopg.connect(pg_url) as first, psycopg.connect(pg_url, autocommit=True) as second:
        first.execute(insert, params)  # uncommitted
        second.execute("SET lock_timeout = '200ms'")
        with pytest.raises(psycopg.errors.LockNotAvailable):
            second.execute(insert, params)
        first.commit()
        second.execute(insert, params)
        ids = second.execute("SELECT id FROM messages ORDER BY id").fetchall()
    assert 3 == len(ids)


def test_a_libpq_without_pipeline_mode_is_refused_in_one_line(pg_url, monkeypatch):
    """The driver pipelines every transaction: a psycopg built on libpq < 14 is refused at open."""
    monkeypatch.setattr(psycopg.Pipeline, "is_supported", classmethod(lambda cls: False))
    with pytest.raises(StoreError) as caught:
        open_store(pg_url)
    assert "libpq 14 or newer" in caught.value.message
    assert "\n" not in caught.value.message
