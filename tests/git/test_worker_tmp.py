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
