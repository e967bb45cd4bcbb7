"""Artifacts (`--artifacts`): a real runner's task writes files; after its run they are
copied beside the run's output and recorded with their hashes, within the cap, links out
of the working directory not followed; `corral prune` removes them with the run."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import CORRAL, STORE_DIALECTS, store_url

from corral import NewTask, Store, TaskStatus, enqueue, open_store
from corral.model.artifacts import artifacts_dir

# Writes three files and a link to a file outside the working directory, then fails: a
# failed run keeps its artifacts too.
JOB = """
mkdir -p out
printf 'hello\\n' > out/a.txt
head -c 2097152 /dev/zero > out/big.bin
printf 'c' > out/c.txt
ln -s ../../secret.txt out/leak.txt
exit 1
"""


@pytest.fixture(params=STORE_DIALECTS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The URL of a fresh store of each dialect."""
    return store_url(request.param, request, tmp_path)


@pytest.fixture
def store(db: str) -> Iterator[Store]:
    """That store, opened on the real clock (the runner's processes use it too)."""
    opened = open_store(db)
    yield opened
    opened.close()


def corral(db: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`corral ARGS` as a process in `cwd` on store `db`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DB"] = db
    return subprocess.run(
        [CORRAL, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=False
    )


def test_a_runs_files_are_kept_hashed_capped_and_links_out_not_followed(
    db: str, store: Store, tmp_path: Path
) -> None:
    """a.txt and c.txt copied with their SHA-256; big.bin past the 1 MB cap recorded as
    skipped, not copied; the link to a file outside the working directory not taken."""
    work = tmp_path / "work"
    work.mkdir()
    (tmp_path / "secret.txt").write_text("secret")
    (work / "job.sh").write_text(JOB)
    task = enqueue(store, NewTask(title="make files", max_attempts=1))
    flags = ("--artifacts", "out/*", "--artifacts", "*.txt", "--artifacts-max-mb", "1")
    started = corral(db, work, "worker", "start", "--name", "w", "--once", "--exec", "sh job.sh",
                     *flags)  # fmt: skip
    assert 1 == started.returncode, started.stderr  # --once: its one task failed
    [run] = store.runs.list_runs(task_id=task.id, worker_id=None, limit=5)
    kept = {a.path: a for a in store.artifacts.run_artifacts(run.id)}
    assert ["out/a.txt", "out/big.bin", "out/c.txt"] == sorted(kept)
    assert hashlib.sha256(b"hello\n").hexdigest() == kept["out/a.txt"].sha256
    assert (2097152, None, "past the 1 MB cap") == (
        kept["out/big.bin"].size_bytes,
        kept["out/big.bin"].sha256,
        kept["out/big.bin"].skipped,
    )
    folder = Path(artifacts_dir(run.transcript_path) or "")
    copies = sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file())
    assert ["out/a.txt", "out/c.txt"] == copies
    assert b"hello\n" == (folder / "out" / "a.txt").read_bytes()
    assert TaskStatus.FAILED == store.tasks.get_task(task.id).status
    pruned = corral(db, work, "prune", "--finished-older-than", "1ms")
    assert 0 == pruned.returncode, pruned.stderr
    assert (False, []) == (folder.exists(), store.artifacts.run_artifacts(run.id))


def test_a_glob_that_could_leave_the_working_directory_is_refused_at_start(
    db: str, tmp_path: Path
) -> None:
    """An absolute glob, or one with `..`: exit 2, one line naming `artifacts`."""
    for pattern in ("../*", "/etc/*", "out/../../x"):
        refused = corral(db, tmp_path, "worker", "start", "--name", "w", "--once", "--exec",
                         "true", "--artifacts", pattern)  # fmt: skip
        assert 2 == refused.returncode
        assert refused.stderr.startswith("corral: error: artifacts: expected a glob relative")
