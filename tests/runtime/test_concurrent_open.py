"""Opening a database: several processes may create it at once; a newer one is refused."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from corral import NewTask, SchemaTooNew, TaskFilter, enqueue, open_store
from corral.store.queries import migration_files

CORRAL = str(Path(sys.executable).with_name("corral"))
LATEST = migration_files("sqlite")[-1][0]

OPEN_STORE = """
from corral import open_store

barrier()
with open_store(ARGS[0]) as store:
    print(json.dumps(store.schema_version()))
"""


def _sqlite_state(db: str) -> tuple[int, str, list[tuple[str, str]]]:
    conn = sqlite3.connect(db)
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        objects = conn.execute(
            "SELECT type, name FROM sqlite_master ORDER BY type, name"
        ).fetchall()
    finally:
        conn.close()
    return version, mode, objects


def _reference_objects(tmp_path: Path) -> list[tuple[str, str]]:
    """What one process alone makes of a new database."""
    db = str(tmp_path / "alone.db")
    open_store(db).close()
    return _sqlite_state(db)[2]


@pytest.mark.parametrize("round_", range(3))
def test_processes_opening_a_new_database_at_once_all_succeed(children, tmp_path, round_):
    """Six processes opening one brand-new database at the same instant all get schema v1."""
    db = str(tmp_path / f"new-{round_}.db")
    for n in range(6):
        children.start(f"p{n}", OPEN_STORE, db)
    children.go()
    finished = children.finish()

    assert {n: (0, "") for n in finished} == {n: (f.code, f.err) for n, f in finished.items()}
    assert {n: [LATEST, LATEST] for n in finished} == {
        n: json.loads(f.out) for n, f in finished.items()
    }
    # A second run of the schema script would have failed on CREATE TABLE in some child,
    # so every child succeeding and one copy of each object mean it ran exactly once.
    assert (LATEST, "wal", _reference_objects(tmp_path)) == _sqlite_state(db)


def test_corral_init_run_by_several_processes_at_once_succeeds_everywhere(tmp_path):
    """Five `corral init` on one new database at once all exit 0 and agree on the version."""
    db = str(tmp_path / "init.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    procs = [
        subprocess.Popen(
            [CORRAL, "init", "--db", db, "--json"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for _ in range(5)
    ]
    try:
        outputs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()

    assert [(0, "")] * 5 == [
        (p.returncode, err) for p, (_, err) in zip(procs, outputs, strict=True)
    ]
    assert [LATEST] * 5 == [json.loads(out)["schema_version"] for out, _ in outputs]
    assert LATEST == _sqlite_state(db)[0]


@pytest.fixture
def newer_db(tmp_path: Path) -> str:
    """A database holding one task whose schema version is beyond what this code knows."""
    db = str(tmp_path / "newer.db")
    with open_store(db) as store:
        enqueue(store, NewTask(title="kept"))
    conn = sqlite3.connect(db)
    conn.execute(f"PRAGMA user_version = {LATEST + 98}")
    conn.close()
    os.remove(db + ".lock")  # so the test can see that a refusal creates nothing
    return db


def test_a_database_from_a_newer_corral_is_refused_and_left_alone(newer_db):
    """open_store refuses a database with a newer schema version and does not touch it."""
    with pytest.raises(SchemaTooNew) as refused:
        open_store(newer_db)

    assert f"schema version {LATEST + 98}" in refused.value.message
    assert LATEST + 98 == _sqlite_state(newer_db)[0]
    conn = sqlite3.connect(newer_db)
    try:
        titles = [r[0] for r in conn.execute("SELECT title FROM tasks")]
    finally:
        conn.close()
    assert ["kept"] == titles
    assert not os.path.exists(newer_db + ".lock")


def test_the_cli_refuses_a_newer_database_with_exit_3_and_one_line(newer_db):
    """`corral list` on a newer database exits 3 with one line naming the version problem."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    proc = subprocess.run(
        [CORRAL, "list", "--db", newer_db],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=False,
    )

    assert (3, "") == (proc.returncode, proc.stdout)
    assert 1 == proc.stderr.count("\n")
    assert "newer" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert LATEST + 98 == _sqlite_state(newer_db)[0]


def test_reopening_a_current_database_keeps_its_data(tmp_path):
    """Opening a database already at the current version migrates nothing and keeps its rows."""
    db = str(tmp_path / "again.db")
    with open_store(db) as store:
        task_id = enqueue(store, NewTask(title="kept")).id
    with open_store(db) as store:
        assert ((LATEST, LATEST), [task_id]) == (
            store.schema_version(),
            [t.id for t in store.tasks.list_tasks(TaskFilter())],
        )
