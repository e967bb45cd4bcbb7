"""What the PostgreSQL benchmarks share: a scratch database per run on the server, corral's
tasks copied by the server, and procrastinate (the peer, extra `pgbench-peer`) with its
no-op jobs loaded."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg

SERVER = os.environ.get("CORRAL_BENCH_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


@contextmanager
def scratch_database() -> Iterator[str]:
    """A new database on the server for one run, dropped afterwards."""
    name = f"corral_bench_{secrets.token_hex(4)}"
    with psycopg.connect(SERVER, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}".encode())
        try:
            yield SERVER.rsplit("/", 1)[0] + "/" + name
        finally:
            admin.execute(f"DROP DATABASE {name} WITH (FORCE)".encode())


def copy_task(url: str, first: str, count: int, *, analyze: str) -> None:
    """Tasks `t-bench2` to `t-bench<count>`, copies of task `first` made by the server, so
    every row is what corral's `enqueue` wrote; then ANALYZE `analyze` (a table, or "" for
    the whole database)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(
            """INSERT INTO tasks (id, title, description, queue, kind, priority, status, payload,
                                  labels, max_attempts, retry_base_s, run_after, created_at,
                                  updated_at)
               SELECT 't-bench' || n, title, description, queue, kind, priority, status, payload,
                      labels, max_attempts, retry_base_s, run_after, created_at, updated_at
               FROM tasks, generate_series(2, %s) AS n WHERE id = %s""",
            (count, first),
        )
        conn.execute(f"ANALYZE {analyze}".encode())


def procrastinate_app(url: str) -> Any:
    """A procrastinate app on `url` with one task, `noop`."""
    import logging

    import procrastinate

    logging.getLogger("procrastinate").setLevel(logging.ERROR)  # its start-up advice
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=url))

    @app.task(name="noop")  # type: ignore[untyped-decorator]  # read as Any (pyproject)
    def noop() -> None:
        """A job that does nothing: the cost measured is the queue's."""

    return app


def load_procrastinate(url: str, jobs: int) -> None:
    """procrastinate's schema and `jobs` no-op jobs."""
    app = procrastinate_app(url)
    with app.open():
        app.schema_manager.apply_schema()
        task = app.tasks["noop"]
        for first in range(0, jobs, 500):
            task.batch_defer(*({} for _ in range(min(500, jobs - first))))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")
