"""`--require` (`[pool] require`): the tools a worker needs, found with their versions at
start, or the start refused with exit 3 and one line, nothing registered or started."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest


def tool(folder: Path, name: str, answer: str, status: int = 0) -> None:
    """A program `name` in `folder` whose `--version` prints `answer`."""
    path = folder / name
    path.write_text(f"#!/bin/sh\nprintf '%s\\n' '{answer}'\nexit {status}\n")
    path.chmod(0o755)


@pytest.fixture
def tools(tmp_path: Path) -> dict[str, str]:
    """An environment whose PATH starts with a folder of fake tools."""
    folder = tmp_path / "bin"
    folder.mkdir()
    tool(folder, "nodeish", "v18.19.0")
    tool(folder, "claudeish", "2.0.5 (Claude Code)")
    tool(folder, "mute", "no version here")
    tool(folder, "broken", "v9.9.9", status=1)
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def start(cli: Any, env: dict[str, str], *required: str) -> Any:
    flags = [arg for spec in required for arg in ("--require", spec)]
    return cli("worker", "start", "--name", "w", "--once", "--exec", "/bin/true", *flags, env=env)


def test_found_tools_are_logged_with_their_versions_and_paths(
    cli: Any, tools: dict[str, str]
) -> None:
    assert 0 == cli("init").code
    done = start(cli, tools, "nodeish>=18.19", "claudeish>=2", "mute", "broken")
    assert 0 == done.code, done.err
    folder = tools["PATH"].split(os.pathsep)[0]
    assert f"tool.found tool=nodeish version=18.19.0 path={folder}/nodeish" in done.err
    assert f"tool.found tool=claudeish version=2.0.5 path={folder}/claudeish" in done.err
    assert f"tool.found tool=mute path={folder}/mute" in done.err
    assert f"tool.found tool=broken path={folder}/broken" in done.err


@pytest.mark.parametrize(
    ("spec", "line"),
    [
        ("nodeish>=20", "required tool nodeish 18.19.0 is too old: the worker needs nodeish>=20"),
        ("nosuchtool", "required tool nosuchtool: not found on PATH"),
        ("mute>=1", "required tool mute: cannot read its version from `mute --version` (exit "),
        ("broken>=1", "required tool broken: cannot read its version from `broken --version` "),
    ],
)
def test_a_missing_or_old_tool_stops_the_start_with_exit_3_and_nothing_registered(
    cli: Any, tools: dict[str, str], spec: str, line: str
) -> None:
    assert 0 == cli("init").code
    refused = start(cli, tools, "claudeish", spec)
    assert (3, 1) == (refused.code, len(refused.err.splitlines())), refused.err
    assert refused.err.startswith(f"corral: error: {line}")
    assert [] == json.loads(cli("worker", "list", "--json").out)


def test_a_spec_of_another_shape_is_exit_2_before_any_tool_is_run(
    cli: Any, tools: dict[str, str]
) -> None:
    assert 0 == cli("init").code
    refused = start(cli, tools, "nosuchtool", "nodeish>20")
    assert 2 == refused.code
    assert refused.err.startswith("corral: error: require: expected a program NAME or NAME>=")


def test_the_pool_refuses_before_it_starts_anything(pool: Any, tools: dict[str, str]) -> None:
    pool.env.update(tools)
    refused = pool.corral(
        "orchestrator", "start", "--workers", "2", "--exec", str(pool.agent), "--require",
        "nodeish>=20",
    )  # fmt: skip
    assert 3 == refused.returncode
    assert refused.stderr.startswith("corral: error: required tool nodeish 18.19.0 is too old")
    assert "stopped" == pool.status()["status"]
    assert [] == pool.store.workers.list_workers()
