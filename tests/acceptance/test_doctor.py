"""`corral doctor`: each check's verdict, the exit code, and nothing changed."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from tests.conftest import corral_in


def verdicts(out: str) -> dict[str, tuple[str, str]]:
    return {c["name"]: (c["status"], c["detail"]) for c in json.loads(out)}


def test_a_healthy_store_passes_every_check_it_needs(cli: Any, tmp_path: Path) -> None:
    assert 0 == cli("init").code
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\necho '2.0.5 (Claude Code)'\n")
    (bin_dir / "claude").chmod(0o755)
    path = f"{bin_dir}{os.pathsep}{os.environ['PATH']}"
    done = cli("doctor", "--json", env={"PATH": path})
    assert 0 == done.code, done.err
    found = verdicts(done.out)
    for name in ("python", "sqlite", "git", "platform", "settings", "disk", "store file", "store"):
        assert "ok" == found[name][0], (name, found[name])
    assert ("ok", "mode 600") == found["store file"]
    assert ("ok", f"2.0.5 at {bin_dir}/claude") == found["claude"]
    assert found["aider"] == ("warn", "not on PATH: `--agent aider` will not work")
    human = cli("doctor", env={"PATH": path}).out.splitlines()
    assert human[0].startswith("ok    python ")


def test_what_will_not_work_is_said_and_a_failure_exits_1(cli: Any) -> None:
    assert 0 == cli("init").code
    os.chmod(cli.db, 0o644)
    opened = verdicts(cli("doctor", "--json").out)["store file"]
    assert "warn" == opened[0] and "more open than 600" in opened[1]
    bad = cli("doctor", "--json", env={"CORRAL_RETRY_BASE_S": "soon"})
    assert 1 == bad.code
    assert verdicts(bad.out)["settings"] == (
        "fail",
        "environment: retry_base_s: expected a duration such as 90s, 30m, 2h or 1d, got 'soon'",
    )
    down = cli("doctor", "--json", env={"CORRAL_DB": "postgresql://postgres@127.0.0.1:9/x"})
    assert 1 == down.code
    status, detail = verdicts(down.out)["store"]
    assert "fail" == status and "Connection refused" in detail


def test_without_a_store_it_says_so_and_creates_none(tmp_path: Path) -> None:
    done = corral_in(tmp_path, "doctor")
    assert 0 == done.returncode, done.stderr
    assert "warn  store       no corral store here or above: run `corral init`" in done.stdout
    assert [] == os.listdir(tmp_path)
