"""Names and rows never lead corral outside its own folders: worker names are single path
components, a payload's workdir stays inside the worker's, and `logs` reads only the store's
runs folder."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.conftest import CORRAL, run_under, store_url

import corral


def _corral(db: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    return subprocess.run(
        [CORRAL, *args],
        env={**env, "CORRAL_DB": db},
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize("name", ["../../escaped", "a/b", "..", "."])
def test_worker_start_refuses_a_name_that_is_not_one_path_component(
    tmp_path: Path, name: str
) -> None:
    """Exit 2 in one line naming `name`; no folder is made (or removed) anywhere."""
    store = tmp_path / "deep" / "er" / ".corral"
    store.mkdir(parents=True)
    db = str(store / "corral.db")
    assert 0 == _corral(db, "init").returncode
    before = sorted(tmp_path.rglob("*"))
    started = _corral(db, "worker", "start", "--name", name, "--exec", "true", "--once")
    assert (2, 1) == (started.returncode, len(started.stderr.splitlines()))
    assert "name: expected a name usable as a file name" in started.stderr
    assert before == sorted(tmp_path.rglob("*"))


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_worker_logs_reads_no_file_outside_the_pools_logs(
    dialect: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A slot name or a registered name with `..` is refused; the outside log is not printed."""
    db = store_url(dialect, request, tmp_path)
    (tmp_path / "outside.log").write_text("secret log\n")
    assert 0 == _corral(db, "init", cwd=tmp_path).returncode
    # From the pool's logs folder (logs/workers beside the store) up to tmp_path.
    up = "../../outside" if dialect == "sqlite" else "../../../outside"
    registered = _corral(db, "worker", "register", "--name", up, "--json")
    worker_id = json.loads(registered.stdout)["worker"]["id"]
    for ident in (up, worker_id):
        shown = _corral(db, "worker", "logs", ident, cwd=tmp_path)
        assert 2 == shown.returncode
        assert "secret" not in shown.stdout


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_a_payload_workdir_outside_the_workers_fails_the_task_without_running_it(
    dialect: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """`workdir: ../../..` fails with a runner error naming the setting; inside runs."""
    db = store_url(dialect, request, tmp_path)
    work = tmp_path / "work"
    (work / "sub").mkdir(parents=True)
    agent = tmp_path / "agent.sh"
    agent.write_text(f"#!/usr/bin/env bash\npwd >> {tmp_path}/ran\n")
    agent.chmod(0o755)
    assert 0 == _corral(db, "init").returncode
    outside = _corral(db, "add", "out", "--payload", '{"workdir": "../../../../etc"}').stdout
    inside = _corral(db, "add", "in", "--payload", json.dumps({"workdir": str(work / "sub")}))
    for _ in range(2):
        _corral(db, "worker", "start", "--name", "w1", "--exec", str(agent), "--once", cwd=work)
    store = corral.open_store(db)
    try:
        refused, ran = (
            store.tasks.get_task(outside.strip()),
            store.tasks.get_task(inside.stdout.strip()),
        )
    finally:
        store.close()
    assert str(ran.status) == "done"
    assert [str(work / "sub")] == (tmp_path / "ran").read_text().splitlines()
    assert (refused.last_error or "").startswith(
        f"runner error: workdir: expected a folder inside {work} (or set tasks.workdir_outside"
    )


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_logs_refuses_a_run_whose_transcript_is_outside_the_runs_folder(
    dialect: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A run row naming any other file (anyone who writes the store can) is refused, exit 1."""
    db = store_url(dialect, request, tmp_path)
    secret = tmp_path / "secret.txt"
    secret.write_text("do not print\n")
    store = corral.open_store(db)
    try:
        corral.enqueue(store, corral.NewTask(title="t"))
        worker = corral.register(store, corral.NewWorker(name="w1")).worker
        claim = corral.claim_next(store, worker.id)
        assert claim is not None
        run = store.runs.start_run(run_under(claim, transcript_path=str(secret), stderr_path=None))
    finally:
        store.close()
    shown = _corral(db, "logs", run.id, cwd=tmp_path)
    assert 1 == shown.returncode
    assert "do not print" not in shown.stdout
    assert "is not in this store's runs folder" in shown.stderr


def test_a_runner_of_a_store_given_by_url_keeps_its_folder_out_of_git(
    tmp_path: Path, pg_url: str
) -> None:
    """A runner on a PostgreSQL store writes its runs in `.corral/` where it runs; inside a
    git work tree that folder is excluded as `corral init` excludes it: `git status` stays
    clean and an agent's `git add -A` cannot commit it."""
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "--quiet", str(repo)], check=True)
    assert 0 == _corral(pg_url, "add", "t").returncode
    ran = _corral(pg_url, "worker", "start", "--name", "w", "--exec", "true", "--once", cwd=repo)
    assert 0 == ran.returncode, ran.stderr
    assert (repo / ".corral" / "runs").is_dir()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True, check=True
    )
    assert "" == status.stdout
