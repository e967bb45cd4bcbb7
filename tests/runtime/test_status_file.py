"""`[status] file`: the orchestrator keeps seed 001's heartbeat file, which a reader polling
it all the while always parses, and which follows the slots from idle to working to
offline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from corral.model.states import TaskStatus

READER = """
import json, sys, time
path, deadline = sys.argv[1], time.monotonic() + float(sys.argv[2])
reads = torn = 0
while time.monotonic() < deadline:
    try:
        with open(path, "rb") as handle:
            text = handle.read()
    except FileNotFoundError:
        continue
    reads += 1
    try:
        json.loads(text)["workers"]
    except (ValueError, KeyError):
        torn += 1
print(reads, torn)
"""


def read(path: Path) -> dict[str, Any]:
    workers: dict[str, Any] = json.loads(path.read_text())["workers"]
    return workers


def test_the_file_follows_the_slots_and_always_parses(any_pool: Any, tmp_path: Path) -> None:
    pool = any_pool
    status = tmp_path / "state" / "worker-heartbeats.json"
    pool.env.update(CORRAL_STATUS_FILE=str(status), CORRAL_STATUS_INTERVAL_S="0.02")
    pool.env["AGENT_SLEEP_S"] = "0.6"
    reader = subprocess.Popen(
        [sys.executable, "-c", READER, str(status), "4"], stdout=subprocess.PIPE, text=True
    )
    pool.start(workers=2)
    pool.wait(lambda: status.exists() and {"slot-1", "slot-2"} <= set(read(status)))
    assert {"idle"} == {beat["status"] for beat in read(status).values()}
    (first,) = pool.add(1)
    pool.wait(lambda: any(b["task"] == first for b in read(status).values()), 10)
    working = next(b for b in read(status).values() if b["task"] == first)
    assert "working" == working["status"]
    assert working["taskTitle"] and working["metadata"]["workerPid"] > 0
    assert 0 == working["metadata"]["restartCount"]
    pool.wait(lambda: pool.store.tasks.get_task(first).status is TaskStatus.DONE, 10)
    pool.wait(lambda: all(b["status"] == "idle" for b in read(status).values()), 10)
    reads, torn = map(int, reader.communicate(timeout=30)[0].split())
    assert reads > 100 and 0 == torn, (reads, torn)
    assert 0 == pool.corral("orchestrator", "stop").returncode
    beats = read(status)
    assert {"offline"} == {b["status"] for b in beats.values()}, beats
    assert [] == [p.name for p in status.parent.iterdir() if p.name != status.name]
    assert 0o600 == status.stat().st_mode & 0o777
