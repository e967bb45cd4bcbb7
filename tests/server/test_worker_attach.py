"""`corral worker attach` as a real process beside a real runner: it prints a run's
transcript while the run goes on, then the next run's, on both stores, read where they
lie and through `corral serve`; SIGINT and SIGTERM end it with exit 0; it ends by itself
once the worker is gone; an unknown worker is one line and exit 2."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.server.conftest import CORRAL, Server

# Each run prints a line, waits until the test lets its task go on (a file named after
# the task), and prints another: what attach shows of the first line shows it live.
WAIT_FOR_GO = (
    "import os,time; t=os.environ['CORRAL_TASK_ID']; print('begin', t, flush=True);"
    " [time.sleep(0.05) for _ in iter(lambda: os.path.exists(t + '.go'), True)];"
    " print('end', t)"
)
TASK = f'{sys.executable} -c "{WAIT_FOR_GO}"'


class Attached:
    """`corral worker attach ARGS` with `env`, run in `folder` (where the runner runs: a
    PostgreSQL store's runs folder is that folder's `.corral/runs`), its output in files."""

    def __init__(self, folder: Path, env: dict[str, str], *args: str) -> None:
        self.out, self.err = folder / "attach.out", folder / "attach.err"
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                [*CORRAL, "worker", "attach", *args], env=env, cwd=folder, stdout=out, stderr=err
            )

    def printed(self) -> str:
        return self.out.read_text()

    def wait_for(self, text: str, timeout_s: float = 60.0) -> None:
        """Until its output holds `text` (fails early if it exited)."""
        deadline = time.monotonic() + timeout_s
        while text not in self.printed():
            assert self.proc.poll() is None, self.err.read_text()
            assert time.monotonic() < deadline, f"no {text!r} in {self.printed()!r}"
            time.sleep(0.05)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)


def _env(served: Server, token: str | None) -> dict[str, str]:
    """The store where it lies (no token), else through the server with `token`."""
    if token is None:
        return dict(served.env)
    return {**served.env, "CORRAL_DB": served.url, "CORRAL_TOKEN": token}


def _add(served: Server, title: str) -> str:
    added = served.corral("add", title)
    assert 0 == added.returncode, added.stderr
    return added.stdout.strip()


def _running(served: Server, task_id: str) -> bool:
    return "running" == json.loads(served.corral("show", task_id, "--json").stdout)["status"]


def _wait(check, what: str, timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("through", "signum"), [("store", signal.SIGINT), ("server", signal.SIGTERM)]
)
def test_attach_prints_the_current_run_live_then_the_next_run(
    served: Server, through: str, signum: int
) -> None:
    """Attached while a task runs, it prints the run's first line before the run ends, the
    rest once it does, then the next task's run; the stop signal ends it with 0."""
    worker_token, viewer = None, None
    if through == "server":
        worker_token, viewer = served.token("worker"), served.token("viewer")
        served.start()
    first = _add(served, "first")
    runner = [*CORRAL, "worker", "start", "--name", "w", "--exec", TASK]
    served.spawn(runner, "runner", _env(served, worker_token))
    _wait(lambda: _running(served, first), "the first run")
    attached = Attached(served.folder, _env(served, viewer), "w")
    try:
        attached.wait_for(f"begin {first}\n")
        assert f"begin {first}\n" == attached.printed()  # the run still waits for its file
        (served.folder / f"{first}.go").touch()
        attached.wait_for(f"end {first}\n")
        second = _add(served, "second")
        attached.wait_for(f"begin {second}\n")
        (served.folder / f"{second}.go").touch()
        attached.wait_for(f"end {second}\n")

        attached.proc.send_signal(signum)
        assert 0 == attached.proc.wait(timeout=30)
        assert f"begin {first}\nend {first}\nbegin {second}\nend {second}\n" == attached.printed()
        err = attached.err.read_text()
        assert "Traceback" not in err and f"of task {second}" in err
    finally:
        attached.close()


def test_attach_ends_by_itself_once_the_worker_is_gone(tmp_path: Path) -> None:
    """A worker deregistered while attach waits for its next run: attach exits 0."""
    served = Server(tmp_path)
    worker_id = served.corral("worker", "register", "--name", "loop").stdout.strip()
    attached = Attached(tmp_path, served.env, worker_id)
    try:
        _wait(lambda: "attached to worker" in attached.err.read_text(), "attach to start")
        assert 0 == served.corral("worker", "deregister", worker_id).returncode
        assert 0 == attached.proc.wait(timeout=30)
    finally:
        attached.close()


def test_attach_to_an_unknown_worker_is_one_line_and_exit_2(tmp_path: Path) -> None:
    """No worker of that id or name: one error line, exit 2, no traceback."""
    served = Server(tmp_path)
    for ident in ("nobody", "w-0000000000"):
        found = served.corral("worker", "attach", ident)
        expected = (2, f"corral: error: worker {ident!r} not found\n")
        assert expected == (found.returncode, found.stderr)
