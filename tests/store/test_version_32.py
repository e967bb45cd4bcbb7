"""Version 32 on a store that holds workers: one offline before it takes the time of its
`worker.offline` event as its deregistered_at (its last heartbeat if that event is gone);
a registered or dead one has none."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from corral import open_store
from corral.store.queries import migration_files

NOT_OVER_HTTP = "a SQLite file of version 31, migrated where it lies"


def _version_31(path: str) -> None:
    """A store at version 31 at `path`: workers offline with and without their event, a
    dead one and an idle one."""
    conn = sqlite3.connect(":memory:")
    for version, file in migration_files("sqlite"):
        if version < 32:
            conn.executescript(Path(file).read_text(encoding="utf-8"))
    for n, (worker_id, status) in enumerate(
        (("w-told", "offline"), ("w-pruned", "offline"), ("w-dead", "dead"), ("w-idle", "idle"))
    ):
        conn.execute(
            "INSERT INTO workers (id, name, hostname, status, registered_at, last_heartbeat_at)"
            " VALUES (?, ?, 'box', ?, 0, ?)",
            (worker_id, worker_id, status, 100.0 + n),
        )
    conn.execute(
        "INSERT INTO events (at, name, worker_id, actor) VALUES (500, 'worker.offline', 'w-told',"
        " 'w-told')"
    )
    conn.execute("PRAGMA user_version = 31")
    conn.commit()
    conn.execute(f"VACUUM INTO '{path}'")
    conn.close()


def test_workers_offline_before_it_get_the_time_they_went_offline(tmp_path: Path) -> None:
    """Their event's time, else their last heartbeat; None for the dead and the idle."""
    path = str(tmp_path / "v31.db")
    _version_31(path)
    with open_store(path) as store:
        found = {w.id: w.deregistered_at for w in store.workers.list_workers()}
    expected = {
        "w-told": datetime.fromtimestamp(500, UTC),
        "w-pruned": datetime.fromtimestamp(101, UTC),
        "w-dead": None,
        "w-idle": None,
    }
    assert expected == found
