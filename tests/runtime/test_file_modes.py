"""corral's folders and files are private (0700/0600) whatever the umask, or shared with
the group (0770/0660) with `[store] mode = "group"`: database, WAL, SHM, lock, pid file,
logs, transcripts, temporary folders."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from tests.conftest import CORRAL, store_url
from tests.runtime.conftest import wait_until

MODES = {"private": (0o700, 0o600), "group": (0o770, 0o660)}


def _run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CORRAL, *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        umask=0o022,
    )


def _modes(folder: Path) -> dict[str, int]:
    """Every path under `folder` (relative) -> its permission bits."""
    return {
        str(path.relative_to(folder)): stat.S_IMODE(path.lstat().st_mode)
        for path in [folder, *folder.rglob("*")]
    }


@pytest.mark.parametrize("mode", ["private", "group"])
@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_a_worker_makes_every_file_and_folder_with_the_stores_mode(
    dialect: str, mode: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Under umask 022, seen by the task while the runner holds the store open (WAL, SHM)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env = {**base, "CORRAL_STORE_MODE": mode, "PATH": f"{Path(CORRAL).parent}:{base['PATH']}"}
    if dialect == "postgresql":
        env["CORRAL_DB"] = store_url(dialect, request, tmp_path)
    agent = tmp_path / "agent.sh"
    agent.write_text(f"#!/usr/bin/env bash\necho out; cp -r {tmp_path}/.corral {tmp_path}/seen\n")
    agent.chmod(0o755)
    assert 0 == _run(env, tmp_path, "init").returncode
    assert 0 == _run(env, tmp_path, "add", "a task").returncode
    started = _run(env, tmp_path, "worker", "start", "--name", "w1", "--exec", str(agent), "--once")
    assert 0 == started.returncode, started.stderr
    folder_mode, file_mode = MODES[mode]
    found = _modes(tmp_path / ".corral")
    expected = {
        path: folder_mode if (tmp_path / ".corral" / path).is_dir() else file_mode for path in found
    }
    assert expected == found
    kinds = {Path(path).parts[0] for path in found if path != "."}
    assert {"runs"} <= kinds
    if dialect == "sqlite":
        assert {"corral.db", "corral.db-wal", "corral.db-shm", "corral.db.lock"} <= {
            p.name for p in (tmp_path / "seen").iterdir()
        }  # the WAL and SHM existed while the task ran
        assert {"corral.db", "corral.db.lock"} <= kinds


def test_the_orchestrators_pid_file_and_logs_are_private(tmp_path: Path) -> None:
    """orchestrator.pid, logs/orchestrator.log, logs/workers/slot-1.log: 0600; folders 0700."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env = {**base, "PATH": f"{Path(CORRAL).parent}:{base['PATH']}"}
    assert 0 == _run(env, tmp_path, "init").returncode
    started = _run(env, tmp_path, "orchestrator", "start", "--daemon", "--exec", "sleep 60")
    assert 0 == started.returncode, started.stderr
    try:
        corral_dir = tmp_path / ".corral"
        wait_until((corral_dir / "logs" / "workers" / "slot-1.log").exists, 30)
        found = _modes(corral_dir)
        for path in ("orchestrator.pid", "logs/orchestrator.log", "logs/workers/slot-1.log"):
            assert 0o600 == found[path], path
        assert {0o700} == {found[p] for p in (".", "logs", "logs/workers")}
    finally:
        assert 0 == _run(env, tmp_path, "orchestrator", "stop").returncode
