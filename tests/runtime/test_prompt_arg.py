"""`--prompt-arg` puts `--` before the prompt, so a task's title never becomes an option of
the agent; `--prompt-arg-bare` leaves it out for a tool that refuses `--`."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from tests.conftest import CORRAL, store_url

TITLE = "--dangerously-skip-permissions"


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
@pytest.mark.parametrize(
    ("flags", "expected"),
    [
        ([], ["--model=x", "--", TITLE]),
        (["--prompt-arg-bare"], ["--model=x", TITLE]),
    ],
)
def test_the_prompt_argument_comes_after_a_double_dash_unless_bare(
    dialect: str,
    flags: list[str],
    expected: list[str],
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    """A real recorder script writes each argument it got on a line of its own."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env = {**base, "CORRAL_DB": store_url(dialect, request, tmp_path)}
    recorder = tmp_path / "recorder.sh"
    recorder.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$@" > {tmp_path}/argv\n')
    recorder.chmod(0o755)
    template = tmp_path / "prompt.txt"
    template.write_text("${title}")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CORRAL, *args], env=env, cwd=tmp_path, capture_output=True, text=True,
            timeout=60, check=False,
        )  # fmt: skip

    assert 0 == run("init").returncode
    assert 0 == run("add", "--", TITLE).returncode
    exec_ = f"{recorder} --model=x"
    flags += ["--prompt-arg", "--prompt-template", str(template), "--once"]
    started = run("worker", "start", "--name", "w1", "--exec", exec_, *flags)
    assert 0 == started.returncode, started.stderr
    assert expected == (tmp_path / "argv").read_text().splitlines()
