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


def test_it_shows_the_names_a_task_would_get_and_why_others_are_withheld(cli: Any) -> None:
    """For the pool's agent: its key passes; a token, a DSN's password and a name not on
    the allow-list are withheld with their reasons; no value is ever shown."""
    assert 0 == cli("init").code
    env = {
        "CORRAL_POOL_AGENT": "claude",
        "ANTHROPIC_API_KEY": "v-key-1",
        "GITHUB_TOKEN": "v-token-2",
        "PG_DSN": "host=db password=v-pass-3",
        "EDITOR": "v-editor-4",
        "CORRAL_ENV_ALLOW": "PG_*",
    }
    done = cli("doctor", "--json", env=env)
    details = [c["detail"] for c in json.loads(done.out) if c["name"] == "task env"]
    passed = details[0].split(" gets ", 1)
    assert "agent claude" == passed[0]
    assert {"ANTHROPIC_API_KEY", "PATH", "HOME"} <= set(passed[1].split(", "))
    assert "withheld, name matches *TOKEN: GITHUB_TOKEN" in details
    assert "withheld, value holds a password= parameter: PG_DSN" in details
    assert any(d.startswith("withheld, not on the allow-list: ") and "EDITOR" in d for d in details)
    assert not [v for v in env.values() if v.startswith("v-") and v in done.out + done.err]


def test_a_sandbox_engine_that_cannot_run_one_is_a_warning_naming_why(
    cli: Any, tmp_path: Path
) -> None:
    """`bwrap`: a bwrap that fails its trial run is `warn` with its last line and
    what will be refused; the machine's own bwrap, where it works, is `ok`."""
    assert 0 == cli("init").code
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bwrap").write_text("#!/bin/sh\necho 'bwrap: No permissions' >&2\nexit 1\n")
    (bin_dir / "bwrap").chmod(0o755)
    broken = cli("doctor", "--json", env={"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"})
    detail = "bwrap does not work here: bwrap: No permissions: `--sandbox bwrap` will be refused"
    assert ("warn", detail) == verdicts(broken.out)["bwrap"]
    real = verdicts(cli("doctor", "--json").out)["bwrap"]
    assert real[0] == "ok" or "will be refused" in real[1]


def test_each_pool_group_is_checked_for_its_agent_or_exec(cli: Any, tmp_path: Path) -> None:
    """`[[pool.group]]`: a group whose agent is on PATH, one whose agent is not and one whose
    exec is not: one check each, named for the group (the missing ones warn, naming the
    program), and each group's task environment, for its own agent."""
    assert 0 == cli("init").code
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "claude").write_text("#!/bin/sh\necho '2.0.5 (Claude Code)'\n")
    (bin_dir / "claude").chmod(0o755)
    fleet = tmp_path / "fleet.toml"
    fleet.write_text(
        '[[pool.group]]\nagent = "claude"\nworkers = 2\n'
        '[[pool.group]]\nagent = "codex"\n'
        '[[pool.group]]\nname = "lint"\nexec = "no-such-linter --fix"\n'
    )
    env = {"PATH": f"{bin_dir}{os.pathsep}/usr/bin:/bin", "CORRAL_CONFIG": str(fleet)}
    done = cli("doctor", "--json", env=env)
    assert 0 == done.code, done.err
    found = verdicts(done.out)
    assert ("ok", f"agent claude: {bin_dir}/claude") == found["pool group claude"]
    missing = "will not start: agent: expected a program on PATH, or the path of an executable"
    assert ("warn", f"{missing}, got 'codex'") == found["pool group codex"]
    lint = found["pool group lint"]
    assert "warn" == lint[0] and "'no-such-linter'" in lint[1]
    first = {}
    for check in json.loads(done.out):
        first.setdefault(check["name"], check["detail"])
    assert first["task env (claude)"].startswith("agent claude gets ")
    assert first["task env (codex)"].startswith("agent codex gets ")
    assert first["task env (lint)"].startswith("a plain command gets ")
    assert "pool" not in found and "task env" not in found


def test_a_corral_variable_nothing_reads_is_named_with_the_one_meant(cli: Any) -> None:
    """A misspelt setting is otherwise ignored in silence: doctor warns of each stray
    `CORRAL_*` name (its escape sequences shown, not obeyed), with the nearest known name,
    and still exits 0; corral's own and the settings' variables pass."""
    assert 0 == cli("init").code
    env = {
        "CORRAL_LEASE": "45m",  # for CORRAL_LEASE_S
        "CORRAL_HEARTBEAT_INTERVAL": "2",  # for CORRAL_HEARTBEAT_INTERVAL_S
        "CORRAL_WIDGETS": "1",
        "CORRAL_\x1b[31mRED": "1",
        "CORRAL_TASK_ID": "t-set-by-a-runner",
        "CORRAL_MAX_ATTEMPTS": "3",
    }
    done = cli("doctor", "--json", env=env)
    assert 0 == done.code, done.err
    strays = [c["detail"] for c in json.loads(done.out) if c["name"] == "variables"]
    ignored = "is not a variable of corral's, and is ignored"
    assert [
        f"CORRAL_\\x1b[31mRED {ignored} (docs/cli.md lists them)",
        f"CORRAL_HEARTBEAT_INTERVAL {ignored}: did you mean CORRAL_HEARTBEAT_INTERVAL_S?",
        f"CORRAL_LEASE {ignored}: did you mean CORRAL_LEASE_S?",
        f"CORRAL_WIDGETS {ignored} (docs/cli.md lists them)",
    ] == strays
    assert "\x1b" not in cli("doctor", env=env).out
