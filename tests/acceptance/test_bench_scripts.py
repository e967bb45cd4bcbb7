"""Every benchmark script starts: its imports resolve and it parses its options.

The scripts run only by hand (`make bench`), so a name moved in `src/` would otherwise
break one unseen until somebody next measures.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
# Shared by the scripts, not run on their own.
LIBRARIES = ("measure", "pg_peer", "pool_harness", "serve_harness")
SCRIPTS = sorted(p.name for p in BENCH.glob("*.py") if p.stem not in LIBRARIES)


@pytest.mark.parametrize("script", SCRIPTS)
def test_the_script_starts_and_shows_its_help(script: str) -> None:
    """`python bench/SCRIPT --help` exits 0 and prints a usage."""
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (0, "") == (done.returncode, done.stderr)
    assert done.stdout.strip()


def test_the_shared_modules_import() -> None:
    """The modules the scripts share import beside them."""
    done = subprocess.run(
        [sys.executable, "-c", f"import {', '.join(LIBRARIES)}"],
        cwd=BENCH,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (0, "") == (done.returncode, done.stderr)


def test_events_follow_runs_quickly_on_both_stores() -> None:
    """bench/events_follow.py with a few events a writer measures both stores and judges them."""
    done = subprocess.run(
        [sys.executable, str(BENCH / "events_follow.py"), "--per-writer", "5", "--idle-s", "0.2"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "" == done.stderr
    assert done.returncode in {0, 1}, done.stdout  # 1: a target missed on a loaded machine
    rows = [line.split() for line in done.stdout.splitlines()]
    assert {"sqlite", "postgresql"} <= {row[0] for row in rows if len(row) == 10}
    assert 2 == sum(line.endswith(("PASS", "MISS")) for line in done.stdout.splitlines())
