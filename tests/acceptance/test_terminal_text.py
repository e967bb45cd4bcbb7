"""Text from users' data reaches the terminal with its control characters shown, never
obeyed: no escape sequence passes, no newline forges a row; `--json` stays exact."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from tests.conftest import CORRAL, store_url

import corral

HOSTILE = "evil\x1b]0;owned\x07\x1b[2J\x9b31m\u202e\nt-forged  done  0"
SHOWN = "evil\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\u202e\\nt-forged  done  0"


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_titles_errors_versions_and_hosts_are_shown_escaped_in_every_listing(
    dialect: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """list, ready, show, why, events, worker list/show: escaped; --json: the exact text."""
    db = store_url(dialect, request, tmp_path)
    store = corral.open_store(db)
    failed = corral.enqueue(store, corral.NewTask(title=HOSTILE, max_attempts=1))
    waiting = corral.enqueue(store, corral.NewTask(title=HOSTILE, depends_on=(failed.id,)))
    worker = corral.NewWorker(name="w1", hostname=HOSTILE, version=HOSTILE, pid=None)
    claim = corral.claim_next(store, corral.register(store, worker).worker.id)
    assert claim is not None
    corral.fail(store, claim.task_id, token=claim.token, error=HOSTILE)
    corral.enqueue(store, corral.NewTask(title=HOSTILE))
    store.close()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}

    def run(*args: str) -> str:
        done = subprocess.run(
            [CORRAL, *args],
            env={**env, "CORRAL_DB": db},
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return done.stdout

    outputs = {
        "list": run("list"),
        "ready": run("ready"),
        "show": run("show", failed.id),
        "why": run("why", waiting.id),
        "events": run("events", "--limit", "50"),
        "workers": run("worker", "list"),
        "worker status": run("worker", "status", claim.worker_id),
    }
    for command, out in outputs.items():
        assert not any(c in out for c in "\x1b\x07\x9b\u202e"), command
        assert not [line for line in out.splitlines() if line.startswith("t-forged")], command
    assert SHOWN in outputs["list"]
    assert SHOWN.replace("\\n", "\n" + " " * 18) in outputs["show"]  # under its first line
    assert [HOSTILE] * 3 == [t["title"] for t in json.loads(run("list", "--json"))]
