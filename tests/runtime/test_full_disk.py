"""A runner whose store's disk fills up: a real tmpfs that the test fills, a real runner.

SQLite reuses its write-ahead log once readers let it; a reader the test holds open keeps
the log growing, so every write of the runner needs new blocks, and fails with `database
or disk is full` as on a disk that filled up under it. Mounting a tmpfs needs root (or a
user namespace): the test is skipped where that is refused.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.runtime.conftest import wait_until
from tests.runtime.test_runner import Harness

import corral
from corral import TaskStatus


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 16 MB tmpfs at tmp_path/.corral, unmounted after the test."""
    folder = tmp_path / ".corral"
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def _fill(folder: Path) -> Path:
    """Fill the file system of `folder` up to its last block; the filler file."""
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for size in (65536, 1024, 1):  # big writes, then the last blocks' bytes
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


def test_a_task_that_ends_on_a_full_disk_makes_the_runner_exit_3(
    small_disk: Path, tmp_path: Path
) -> None:
    """The task ends while the store cannot be written: the runner exits 3 (not 0), and once
    there is room again the reconciler returns the task to the queue."""
    h = Harness(tmp_path)
    try:
        gate = tmp_path / "gate"
        task_id = h.add()
        agent = h.script("gated.sh", f'while [ ! -e "{gate}" ]; do sleep 0.02; done\n')
        runner = h.start("--exec", agent, "--once")
        h.wait_running(task_id, launched=True)  # a launch the store never took is not started
        reader = sqlite3.connect(h.db)
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM tasks").fetchone()  # pins the log: it must grow
        filler = _fill(small_disk)
        gate.touch()
        assert 3 == runner.wait(60)
        assert h.log_has("disk is full")
        assert TaskStatus.RUNNING is h.task(task_id).status
        reader.rollback()
        reader.close()
        filler.unlink()
        settings = corral.Settings(heartbeat_interval_s=0.2, retry_base_s=0)
        wait_until(
            lambda: corral.reconcile_once(h.store, settings=settings).claims_expired == 1, 10, 0.1
        )
        task = h.task(task_id)
        assert (TaskStatus.READY, 1) == (task.status, task.crashes)
    finally:
        h.close()
