"""Fixtures shared by every test: a fake clock, a store per dialect, and the CLI as a process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from corral import FakeClock, Settings, Store, open_store

# Dialects the store conformance suite runs on. PostgreSQL joins with its driver.
STORE_DIALECTS = ["sqlite"]
CORRAL = str(Path(sys.executable).with_name("corral"))


@pytest.fixture
def clock() -> FakeClock:
    """A clock that moves only when the test says so."""
    return FakeClock()


@pytest.fixture
def settings() -> Settings:
    """Short intervals so time-driven behaviour needs little fake time."""
    return Settings(
        heartbeat_interval_s=1.0,
        dead_after_missed=3,
        lease_s=60.0,
        retry_base_s=1.0,
        retry_max_s=60.0,
        retry_jitter=0.0,
    )


@pytest.fixture(params=STORE_DIALECTS)
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    """A fresh, migrated store of each dialect, on the fake clock."""
    opened = open_store(str(tmp_path / "corral.db"), clock=clock)
    yield opened
    opened.close()


@dataclass
class Result:
    """What a CLI run printed and returned."""

    code: int
    out: str
    err: str


@pytest.fixture
def cli(tmp_path: Path) -> Iterator[object]:
    """Run `corral ARGS` as a fresh process against a temporary store."""
    db = str(tmp_path / "cli.db")

    def run(*args: str, env: dict[str, str] | None = None, input: str | None = None) -> Result:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        full_env["CORRAL_DB"] = db
        full_env.update(env or {})
        proc = subprocess.run(
            [CORRAL, *args],
            capture_output=True,
            text=True,
            env=full_env,
            input=input,
            timeout=60,
            check=False,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)

    run.db = db  # type: ignore[attr-defined]
    yield run
