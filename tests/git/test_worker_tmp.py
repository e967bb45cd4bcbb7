"""Worker temporary directories: the tasks' TMPDIR, removed on stop or by reconcile."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path


def test_a_command_workers_tasks_get_a_tmpdir_that_goes_with_the_worker(cli, tmp_path):
    """TMPDIR is tmp/NAME.PID beside the store, the task can write there, it is gone after."""
    obs = tmp_path / "tmpdir"
    script = tmp_path / "agent.sh"
    script.write_text(f'#!/bin/sh\necho "$TMPDIR" > {obs}\ntouch "$TMPDIR/scratch"\n')
    script.chmod(0o755)
    cli("add", "use a temp file")
    assert 0 == cli("worker", "start", "--name", "w1", "--exec", str(script), "--once").code
    used = Path(obs.read_text().strip())
    assert Path(cli.db).parent / "tmp" == used.parent
    assert used.name.startswith("w1.")
    assert not used.exists()


def test_reconcile_removes_the_tmpdirs_of_processes_that_are_gone(cli):
    """A dead process's directory goes; a live one's stays."""
    root = Path(cli.db).parent / "tmp"
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead, live = root / f"w1.{gone.pid}", root / f"w2.{os.getpid()}"
    for folder in (dead, live):
        folder.mkdir(parents=True)
        (folder / "left.txt").write_text("x")
    report = json.loads(cli("reconcile", "--json").out)
    assert 1 == report["tmp_dirs_removed"]
    assert (False, True) == (dead.exists(), live.exists())


def test_reconcile_leaves_a_symlink_or_file_in_tmp_alone_and_does_not_count_it(cli, tmp_path):
    """tmp/NAME.PID that is a symbolic link (to a folder elsewhere) or a file, its process
    gone: left as it is, the folder it points to intact, and not counted as removed."""
    root = Path(cli.db).parent / "tmp"
    root.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("x")
    gone = subprocess.Popen(["true"])
    gone.wait()
    (root / f"w1.{gone.pid}").symlink_to(elsewhere)
    (root / f"w2.{gone.pid}").write_text("a file")
    (root / "w3.99999999999999999999").mkdir()  # past any pid: its process is gone
    report = json.loads(cli("reconcile", "--json").out)
    assert 1 == report["tmp_dirs_removed"]
    assert ["w1." + str(gone.pid), "w2." + str(gone.pid)] == sorted(os.listdir(root))
    assert ["keep.txt"] == os.listdir(elsewhere)
