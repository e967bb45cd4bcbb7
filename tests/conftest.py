"""Fixtures shared by every test: a fake clock, a store per dialect, and the CLI as a process.

PostgreSQL tests run against the server at CORRAL_TEST_PG (default: postgres on
127.0.0.1:5432). The session creates one database for itself and each test its own
schema in it; both are dropped afterwards. With CI=true an unreachable server fails the
suite; elsewhere the PostgreSQL tests are skipped with the reason.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import corral
from corral import (
    Claim,
    FakeClock,
    NewRun,
    NewTask,
    NewWorker,
    RunOutcome,
    Settings,
    Store,
    open_store,
)
from corral.foundation.process_keys import key_digest

# Dialects the store conformance suite runs on.
STORE_DIALECTS = ["sqlite", "postgresql"]
CORRAL = str(Path(sys.executable).with_name("corral"))
PG_SERVER = os.environ.get("CORRAL_TEST_PG", "postgresql://postgres@127.0.0.1:5432/postgres")


def _admin(url: str) -> object:
    import psycopg

    return psycopg.connect(url, autocommit=True, connect_timeout=3)


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A database of this test session's own on the PostgreSQL server, dropped at the end."""
    try:
        admin = _admin(PG_SERVER)
    except Exception as exc:  # any reason the server cannot be used: psycopg missing too
        reason = f"PostgreSQL at {PG_SERVER} unreachable: {str(exc).splitlines()[0]}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    name = f"corral_test_{os.getpid()}_{secrets.token_hex(3)}"
    admin.execute(f"CREATE DATABASE {name}")  # type: ignore[attr-defined]
    try:
        yield PG_SERVER.rsplit("/", 1)[0] + "/" + name
    finally:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")  # type: ignore[attr-defined]
        admin.close()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def pg_schema(pg_database: str) -> Callable[[], tuple[str, Callable[[], None]]]:
    """A factory of fresh schemas: (a URL whose search_path is the schema, drop it)."""

    def make() -> tuple[str, Callable[[], None]]:
        schema = f"t_{secrets.token_hex(6)}"
        with _admin(pg_database) as conn:  # type: ignore[attr-defined]
            conn.execute(f"CREATE SCHEMA {schema}")

        def drop() -> None:
            with _admin(pg_database) as conn:  # type: ignore[attr-defined]
                conn.execute(f"DROP SCHEMA {schema} CASCADE")

        return f"{pg_database}?options=-csearch_path%3D{schema}", drop

    return make


@pytest.fixture
def pg_url(pg_schema: Callable[[], tuple[str, Callable[[], None]]]) -> Iterator[str]:
    """The URL of a fresh, empty schema of its own for one test, dropped afterwards."""
    url, drop = pg_schema()
    yield url
    drop()


def store_url(dialect: str, request: pytest.FixtureRequest, folder: Path) -> str:
    """Where a test's store of `dialect` lives: a file in `folder`, or a fresh schema."""
    if dialect == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return str(folder / "corral.db")


@pytest.fixture
def clock() -> FakeClock:
    """A clock that moves only when the test says so."""
    return FakeClock()


@pytest.fixture
def settings() -> Settings:
    """Short intervals so time-driven behaviour needs little fake time."""
    return Settings(
        heartbeat_interval_s=1.0,
        dead_after_missed=3,
        lease_s=60.0,
        retry_base_s=1.0,
        retry_max_s=60.0,
        retry_jitter=0.0,
    )


@pytest.fixture(params=STORE_DIALECTS)
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    """A fresh, migrated store of each dialect, on the fake clock."""
    opened = open_store(store_url(request.param, request, tmp_path), clock=clock)
    yield opened
    opened.close()


@dataclass
class Result:
    """What a CLI run printed and returned."""

    code: int
    out: str
    err: str


def corral_in(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`corral ARGS` run in `cwd` as a user runs it there: no CORRAL_ variable, so the
    command finds (or `init` makes) the store from `cwd` itself."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    return subprocess.run(
        [CORRAL, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def allowing(env: dict[str, str]) -> dict[str, str]:
    """`env` with `CORRAL_ENV_ALLOW` naming its variables other than corral's own, as a user
    lets a command's variables through to its tasks; unless `env` says what to allow."""
    passed = [name for name in env if not name.startswith("CORRAL_")]
    if not passed or "CORRAL_ENV_ALLOW" in env:
        return env
    return {"CORRAL_ENV_ALLOW": ",".join(passed), **env}


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[object]:
    """Run `corral ARGS` as a fresh process against a temporary store."""
    db = str(tmp_path / "cli.db")

    def run(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        full_env["CORRAL_DB"] = db
        full_env.update(allowing(env or {}))
        proc = subprocess.run(
            [CORRAL, *args],
            capture_output=True,
            text=True,
            env=full_env,
            input=input,
            timeout=60,
            check=False,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    run.db = db  # type: ignore[attr-defined]
    yield run


def run_under(claim: Claim, *, transcript_path: str | None, stderr_path: str | None) -> NewRun:
    """The spec of a first run of an agent command under `claim`, writing to these files."""
    return NewRun(
        task_id=claim.task_id,
        worker_id=claim.worker_id,
        token=claim.token,
        attempt=1,
        prompt=None,
        command=("agent",),
        cwd="/work",
        transcript_path=transcript_path,
        stderr_path=stderr_path,
    )


def finished_run(db: str, runs_key: str) -> str:
    """The id of a run of store `db` that has finished, of a worker that recorded the hash
    of `runs_key` (the key its runs' processes hold: corral.foundation.processes)."""
    store = open_store(db)
    try:
        spec = NewWorker(name="w", runs_key_hash=key_digest(runs_key))
        worker = corral.register(store, spec).worker
        task = corral.enqueue(store, NewTask(title="ran"))
        claimed = corral.claim(store, task.id, worker.id)
        run = store.runs.start_run(run_under(claimed, transcript_path=None, stderr_path=None))
        store.runs.finish_run(run.id, outcome=RunOutcome.DONE, exit_code=0)
    finally:
        store.close()
    return run.id


def sandbox_or_skip(kind: str) -> None:
    """Skip, with the reason, where `kind`'s engine is missing or cannot make a sandbox
    here (a user without privileges and without user namespaces; podman where its
    runtime cannot start a container). Under CI, as root, bwrap must work: CI installs it."""
    from corral.runtime.worker.sandbox import probe

    _, problem = probe(kind)
    if problem is None:
        return
    if kind == "bwrap" and os.environ.get("CI") == "true" and os.getuid() == 0:
        pytest.fail(f"bwrap must work under CI: {problem}")
    pytest.skip(f"{kind} cannot run here: {problem}")
