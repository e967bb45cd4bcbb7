"""Secrets stay where they belong: a PostgreSQL password is never shown, stored or handed to
tasks (except as PGPASSWORD when allowed), and workers' tasks do not inherit secrets."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import psycopg
import pytest
from tests.conftest import CORRAL, store_url

PASSWORD = "hunter2pw"  # noqa: S105 (a test password, accepted and ignored by trust auth)
BIN = str(Path(CORRAL).parent)


def _with_password(url: str, *, in_query: bool) -> str:
    """The test server's URL carrying PASSWORD (trust auth accepts and ignores it)."""
    if in_query:
        return url.replace("?", f"?password={PASSWORD}&", 1)
    return url.replace("postgresql://postgres@", f"postgresql://postgres:{PASSWORD}@", 1)


def _run(
    env: dict[str, str], *args: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    return subprocess.run(
        [CORRAL, *args],
        env={**base, "PATH": f"{BIN}:{os.environ['PATH']}", **env},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("in_query", [False, True])
def test_a_password_is_masked_in_every_output_and_error(pg_url: str, in_query: bool) -> None:
    """init, db status (both with --json) and errors, libpq's echo of the URL included,
    show `***` where the password was."""
    url = _with_password(pg_url, in_query=in_query)
    outputs = [
        _run({"CORRAL_DB": url}, *args) for args in (["init"], ["init", "--json"], ["db", "status"])
    ]
    outputs.append(_run({"CORRAL_DB": url}, "db", "status", "--json"))
    broken = url + "&nonsense=1"  # libpq refuses the parameter, echoing the URL
    outputs.append(_run({"CORRAL_DB": broken}, "list"))
    outputs.append(_run({"CORRAL_DB": url.replace("127.0.0.1:5432", "127.0.0.1:1")}, "list"))
    assert [0, 0, 0, 0, 3, 3] == [out.returncode for out in outputs]
    for out in outputs:
        assert PASSWORD not in out.stdout + out.stderr
        assert "***" in out.stdout + out.stderr


@pytest.mark.parametrize("allow", ["", "PGPASSWORD"])
def test_tasks_get_the_store_without_its_password_and_pgpassword_only_when_allowed(
    pg_url: str, tmp_path: Path, allow: str
) -> None:
    """A task's CORRAL_DB has no password; PGPASSWORD carries it only if env.allow names it;
    the agent's own `corral done` still reaches the store."""
    url = _with_password(pg_url, in_query=False)
    env = {"CORRAL_DB": url, "CORRAL_ENV_ALLOW": allow} if allow else {"CORRAL_DB": url}
    agent = tmp_path / "agent.sh"
    agent.write_text(
        "#!/usr/bin/env bash\n"
        f"env > {tmp_path}/seen.env\n"
        'corral done "$CORRAL_TASK_ID" >/dev/null\n'
    )
    agent.chmod(0o755)
    assert 0 == _run(env, "init").returncode
    assert 0 == _run(env, "add", "a task").returncode
    started = _run(env, "worker", "start", "--name", "w1", "--exec", str(agent), "--once")
    assert 0 == started.returncode, started.stderr
    seen = dict(
        line.split("=", 1)
        for line in (tmp_path / "seen.env").read_text().splitlines()
        if "=" in line
    )
    assert pg_url == seen["CORRAL_DB"]
    assert (PASSWORD if allow else None) == seen.get("PGPASSWORD")
    listed = _run(env, "list", "--json")
    assert 0 == listed.returncode, listed.stderr
    assert ["done"] == [task["status"] for task in json.loads(listed.stdout)]


def test_the_orchestrator_neither_stores_nor_shows_the_password(pg_pool: object) -> None:
    """The state row's config.db, `orchestrator status --json` and `status --json` mask it."""
    pool: object = pg_pool
    url = _with_password(pool.db, in_query=True)  # type: ignore[attr-defined]
    pool.env["CORRAL_DB"] = url  # type: ignore[attr-defined]
    pool.start(workers=1)  # type: ignore[attr-defined]
    pool.wait_running(1)  # type: ignore[attr-defined]
    shown = [
        pool.corral(*args).stdout
        for args in (["orchestrator", "status", "--json"], ["status", "--json"])
    ]  # type: ignore[attr-defined]
    assert all("password=***" in out and PASSWORD not in out for out in shown)
    schema = pool.db.split("search_path%3D", 1)[1]  # type: ignore[attr-defined]
    with psycopg.connect(pool.db.split("?", 1)[0], autocommit=True) as conn:  # type: ignore[attr-defined]
        rows = conn.execute(f"SELECT config::text FROM {schema}.orchestrator").fetchall()
    assert rows and all(PASSWORD not in row[0] for row in rows)


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_worker_start_withholds_secrets_from_tasks_and_logs_only_their_names(
    dialect: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Bare TOKEN, a lower-case api key, DATABASE_URL with a password, the issue's MYSQL_PWD
    and key=value DSN: not in the task's environment even where patterns of env.allow name
    them; the worker's log names them, never their values. An ordinary name passes only
    when allowed."""
    secrets = {
        "TOKEN": "v-token-1",
        "my_api_key": "v-key-2",
        "DATABASE_URL": "postgresql://app:v-pass-3@db/app",
        "CI_SECRETS": "v-sec-4",
        "MYSQL_PWD": "v-pwd-5",
        "PG_DSN": "host=db password=v-dsn-6",
    }
    env = {"CORRAL_DB": store_url(dialect, request, tmp_path), **secrets, "ORDINARY": "kept"}
    env |= {
        "NOT_ALLOWED": "v-not-7",
        "CORRAL_ENV_ALLOW": "ORD*,*TOKEN,my_*,DATABASE_*,CI_*,*_PWD,PG_*",
    }
    agent = tmp_path / "agent.sh"
    agent.write_text(f"#!/usr/bin/env bash\nenv > {tmp_path}/seen.env\n")
    agent.chmod(0o755)
    assert 0 == _run(env, "init").returncode
    assert 0 == _run(env, "add", "a task").returncode
    started = _run(env, "worker", "start", "--name", "w1", "--exec", str(agent), "--once")
    assert 0 == started.returncode, started.stderr
    seen = (tmp_path / "seen.env").read_text()
    assert "ORDINARY=kept" in seen
    assert not [value for value in (*secrets.values(), "v-not-7") if value in seen]
    logged = re.search(r"worker\.env_withheld names=(\S+) not_allowed=\d+", started.stderr)
    assert logged is not None
    assert secrets.keys() <= set(logged[1].split(","))
    assert not [value for value in secrets.values() if value in started.stderr]


@pytest.mark.parametrize(
    "command",
    [
        ["worker", "start", "--name", "w1", "--exec", "true"],
        ["orchestrator", "start", "--exec", "true"],
    ],
)
def test_an_empty_deny_list_is_refused_rather_than_passing_every_secret(
    tmp_path: Path, command: list[str]
) -> None:
    """CORRAL_ENV_DENY='' is exit 2, one line naming env_deny and the explicit way."""
    env = {"CORRAL_DB": str(tmp_path / "corral.db")}
    assert 0 == _run(env, "init").returncode
    refused = _run({**env, "CORRAL_ENV_DENY": ""}, *command)
    assert 2 == refused.returncode
    assert [
        "corral: error: environment: env_deny: expected at least one pattern "
        "(to pass a secret, name it in env.allow)"
    ] == refused.stderr.splitlines()
