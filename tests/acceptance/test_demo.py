"""`make run`'s job end to end: the fleet demo lands every task's work on its main."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo.py"


def test_the_demo_lands_all_eighteen_tasks_and_tells_its_whole_story(tmp_path: Path) -> None:
    """A pool of three sample agents in worktrees: all done, every branch landed, main
    clean, and the conflict, the flaky retry, the killed worker and the review all seen."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    done = subprocess.run(
        [sys.executable, str(DEMO)],
        env={**env, "DEMO_DIR": str(tmp_path / "demo")},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert 0 == done.returncode, done.stdout[-3000:] + done.stderr[-3000:]
    summary = done.stdout.splitlines()
    assert any(
        line.startswith("18/18 tasks done") and "0 branch(es) not landed" in line
        for line in summary
    )
    assert [] == [line for line in summary if line.startswith("  NO ")]
    assert "Traceback" not in done.stdout + done.stderr
