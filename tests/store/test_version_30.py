"""Version 30 on a store that holds rows: tokens may be admins', and provider accounts
belong to a namespace, with every older token, session and account setting kept."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import sqlite3
from pathlib import Path

from corral import open_store
from corral.model.api_tokens import Role, presented, secret_hash
from corral.store.queries import migration_files
from corral.usecases.api_tokens import authenticate, create_token
from corral.usecases.usage import provider_states

NOT_OVER_HTTP = "a SQLite file of version 29, migrated where it lies"
SECRET = "s" * 43


def _version_29(path: str) -> None:
    """A store at version 29 at `path`: an operator token of team-b with a dashboard
    session, a capped `claude` account, and a team-b task."""
    conn = sqlite3.connect(":memory:")
    for version, file in migration_files("sqlite"):
        if version < 30:
            conn.executescript(Path(file).read_text(encoding="utf-8"))
    conn.executescript(f"""
        INSERT INTO tokens (id, name, role, secret_hash, created_at, namespace)
        VALUES ('k-0123456789', 'ops', 'operator', '{secret_hash(SECRET)}', 0, 'team-b');
        INSERT INTO dashboard_sessions (id, secret_hash, token_id, created_at, expires_at)
        VALUES ('s-1', 'h', 'k-0123456789', 0, 1e10);
        INSERT INTO providers (name, max_running, updated_at) VALUES ('claude', 2, 0);
        INSERT INTO tasks (id, title, queue, kind, status, max_attempts, retry_base_s,
                           run_after, created_at, updated_at, namespace)
        VALUES ('t-b', 'theirs', 'default', 'default', 'ready', 3, 10, 0, 0, 0, 'team-b');
    """)
    conn.execute("PRAGMA user_version = 29")
    conn.execute(f"VACUUM INTO '{path}'")
    conn.close()


def test_tokens_sessions_and_each_namespaces_accounts_outlive_the_migration(tmp_path) -> None:
    """The token still authenticates and its session still refers to it (the tokens table
    is made again), an admin token can be made, and `claude`'s cap holds in default and in
    team-b alike."""
    path = str(tmp_path / "v29.db")
    _version_29(path)
    with open_store(path) as store:
        kept = authenticate(store, presented("k-0123456789", SECRET))
        assert kept is not None
        assert ("ops", Role.OPERATOR, "team-b") == (kept.name, kept.role, kept.namespace)
        assert Role.ADMIN == create_token(store, role="admin", name="root")[0].role
        caps = [
            [(s.name, s.max_running) for s in provider_states(store.in_namespace(n))]
            for n in ("default", "team-b")
        ]
        assert [[("claude", 2)], [("claude", 2)]] == caps
    with sqlite3.connect(path) as opened:
        assert [] == opened.execute("PRAGMA foreign_key_check").fetchall()
        assert [("s-1",)] == opened.execute("SELECT id FROM dashboard_sessions").fetchall()
