"""Real processes for concurrency tests: start children behind a barrier, wait, clean up.

A child is `python -c PRELUDE + body NAME FOLDER ARGS...`. It calls `barrier()` once it is
ready; the test releases every child at once by creating `FOLDER/go`, so they hit the
store at the same instant instead of one after another as they finish starting up.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PRELUDE = '''
import json, os, sys, time

NAME, FOLDER = sys.argv[1], sys.argv[2]
ARGS = sys.argv[3:]


def barrier():
    """Tell the test this child is ready, then wait until it says go."""
    open(os.path.join(FOLDER, "ready-" + NAME), "w").close()
    deadline = time.monotonic() + 30
    while not os.path.exists(os.path.join(FOLDER, "go")):
        if time.monotonic() > deadline:
            sys.exit("barrier: no go within 30 s")
        time.sleep(0.001)
'''


def wait_until(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.005) -> None:
    """Poll `predicate` until it holds; fail the test if it does not within `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout_s} s")
        time.sleep(interval_s)


@dataclass
class Finished:
    """What a child process returned and printed."""

    code: int
    out: str
    err: str


class Children:
    """Child Python processes started together; every one is killed at teardown."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, body: str, *args: str) -> None:
        """Start child `name` running `body` (after PRELUDE) with `args`."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        with (
            open(self.folder / f"{name}.out", "wb") as out,
            open(self.folder / f"{name}.err", "wb") as err,
        ):
            self._procs[name] = subprocess.Popen(
                [sys.executable, "-c", PRELUDE + body, name, str(self.folder), *args],
                stdout=out,
                stderr=err,
                env=env,
                start_new_session=True,
            )

    def go(self, timeout_s: float = 30.0) -> None:
        """Wait until every child reached its barrier, then release them all at once."""
        names = list(self._procs)

        def all_ready() -> bool:
            for name in names:
                proc = self._procs[name]
                if proc.poll() is not None:
                    err = (self.folder / f"{name}.err").read_text()
                    raise AssertionError(f"child {name} exited before the barrier: {err}")
            return all((self.folder / f"ready-{name}").exists() for name in names)

        wait_until(all_ready, timeout_s)
        (self.folder / "go").touch()

    def finish(self, timeout_s: float = 60.0) -> dict[str, Finished]:
        """Wait for every child; what each returned and printed."""
        done = {}
        for name, proc in self._procs.items():
            code = proc.wait(timeout=timeout_s)
            done[name] = Finished(
                code,
                (self.folder / f"{name}.out").read_text(),
                (self.folder / f"{name}.err").read_text(),
            )
        return done

    def kill_all(self) -> None:
        """Kill every child still running, with its process group, and reap it."""
        for proc in self._procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


@pytest.fixture
def children(tmp_path: Path) -> Iterator[Children]:
    """Start real child processes; none outlives the test."""
    started = Children(tmp_path / "children")
    try:
        yield started
    finally:
        started.kill_all()
