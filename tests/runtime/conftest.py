"""Real processes for concurrency tests: start children behind a barrier, wait, clean up.

A child is `python -c PRELUDE + body NAME FOLDER ARGS...`. It calls `barrier()` once it is
ready; the test releases every child at once by creating `FOLDER/go`, so they hit the
store at the same instant instead of one after another as they finish starting up.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from tests.conftest import allowing

from corral import NewTask, enqueue, load_settings, open_store

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


AGENT = """#!/bin/sh
# A sample agent for pool tests: takes AGENT_SLEEP_S seconds, then succeeds.
sleep "${AGENT_SLEEP_S:-0.1}"
"""
# Short intervals so that restarts, beats and reconcile passes take fractions of a second.
# The dead window stays 2 s (ten beats): at three beats (0.6 s) a worker stalled by a busy
# CI machine was declared dead holding its task, which a stop then found counted as a crash.
# Tests of silence itself set their own.
POOL_ENV = {
    "CORRAL_HEARTBEAT_INTERVAL_S": "0.2",
    "CORRAL_DEAD_AFTER_MISSED": "10",
    "CORRAL_RECONCILE_INTERVAL_S": "1",
    "CORRAL_RESTART_DELAY_S": "0.1",
    "CORRAL_MAX_RESTART_DELAY_S": "0.4",
    "CORRAL_MIN_UPTIME_S": "5",
    "CORRAL_KILL_TIMEOUT_S": "2",
    "CORRAL_RETRY_BASE_S": "0",
    "CORRAL_RETRY_JITTER": "0",
}


class Pool:
    """Orchestrators (`corral orchestrator start`) as real processes on one temporary store."""

    def __init__(self, folder: Path, db: str | None = None) -> None:
        self.folder = folder
        self.db = db or str(folder / ".corral" / "corral.db")
        (folder / ".corral").mkdir(parents=True)
        self.agent = folder / "agent.sh"
        self.agent.write_text(AGENT)
        self.agent.chmod(0o755)
        bin_dir = str(Path(sys.executable).parent)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        self.env.update(POOL_ENV, CORRAL_DB=self.db, PATH=f"{bin_dir}:{os.environ['PATH']}")
        self.started: list[subprocess.Popen[bytes]] = []
        self.store = open_store(self.db)

    def environment(self) -> dict[str, str]:
        """`env`, allowing its tasks the variables the test set (tests.conftest.allowing)."""
        added = {k: v for k, v in self.env.items() if os.environ.get(k) != v}
        return {**self.env, **allowing(added)}

    def corral(self, *args: str, timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
        """Run one corral command against the store."""
        return subprocess.run(
            [sys.executable, "-m", "corral.cli.main", *args],
            capture_output=True,
            text=True,
            env=self.environment(),
            cwd=self.folder,
            timeout=timeout_s,
            check=False,
        )

    def add(self, count: int, **fields: object) -> list[str]:
        """Enqueue `count` tasks, with the retry settings of the pool's environment; their ids."""
        settings = load_settings(self.env)
        return [
            enqueue(self.store, NewTask(title=f"task {n}", **fields), settings=settings).id  # type: ignore[arg-type]
            for n in range(count)
        ]

    def start(
        self, *args: str, workers: int | None = 2, cwd: Path | None = None
    ) -> subprocess.Popen[bytes]:
        """Start an orchestrator in the foreground (in `cwd`, default the pool's folder: a
        PostgreSQL store keeps its logs in `.corral/` there); its log is `log(n)`.

        `--workers N --exec AGENT` come first; with `workers=None`, neither (the config's
        `[pool]` keys decide)."""
        n = len(self.started)
        pool = [] if workers is None else ["--workers", str(workers), "--exec", str(self.agent)]
        with open(self.folder / f"orchestrator-{n}.log", "wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "corral.cli.main", "orchestrator", "start", *pool, *args],
                stdout=log,
                stderr=log,
                env=self.environment(),
                cwd=cwd or self.folder,
                start_new_session=True,
            )
        self.started.append(proc)
        return proc

    @staticmethod
    def wait(predicate: Callable[[], bool], timeout_s: float = 30) -> None:
        """`wait_until`, for test modules (they cannot import this conftest)."""
        wait_until(predicate, timeout_s)

    def log(self, n: int = 0) -> str:
        """What orchestrator number `n` has logged so far."""
        return (self.folder / f"orchestrator-{n}.log").read_text()

    def status(self) -> dict[str, object]:
        """The state row as `orchestrator status --json` shows it."""
        return self.store.orchestrators.get_orchestrator().to_dict()

    def wait_running(self, workers: int) -> None:
        """Until the row is running and `workers` slots have registered workers."""

        def ready() -> bool:
            state = self.store.orchestrators.get_orchestrator()
            running = [s for s in state.slots if s["state"] == "running"]
            return str(state.status) == "running" and len(running) == workers

        wait_until(ready, 30)

    def processes(self) -> list[psutil.Process]:
        """Live processes whose environment names this store: orchestrators, workers, agents."""
        found = []
        for proc in psutil.process_iter():
            with contextlib.suppress(psutil.Error):
                if (
                    proc.status() != psutil.STATUS_ZOMBIE
                    and proc.environ().get("CORRAL_DB") == self.db
                ):
                    found.append(proc)
        return found

    def close(self) -> None:
        """Kill whatever is left, reap what we started, close the store. The descendants of
        what we started too: a test may have named the store otherwise in their environment
        (a URL with its password), and workers lead process groups of their own. What we
        started is stopped first, so that an orchestrator cannot spawn a worker between the
        listing and the kill (a CI run leaked one so, idle for good)."""
        for started in self.started:
            with contextlib.suppress(ProcessLookupError):
                os.kill(started.pid, signal.SIGSTOP)
        descendants = []
        for started in self.started:
            with contextlib.suppress(psutil.Error):
                descendants += psutil.Process(started.pid).children(recursive=True)
        for proc in [*self.processes(), *descendants]:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        for proc in self.started:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        self.store.close()


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[Pool]:
    """A store and a sample agent for orchestrator tests; nothing outlives the test."""
    made = Pool(tmp_path)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def pg_pool(tmp_path: Path, pg_url: str) -> Iterator[Pool]:
    """The same on a PostgreSQL store of the test's own."""
    made = Pool(tmp_path, db=pg_url)
    try:
        yield made
    finally:
        made.close()


# -- a private PostgreSQL server, for tests that stop and start one ------------------------


@dataclass
class PrivateServer:
    """A throwaway PostgreSQL cluster in a temporary folder."""

    folder: Path
    port: int

    @property
    def url(self) -> str:
        """The URL of its `corral` database."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/corral"

    def ctl(self, *args: str, check: bool = True) -> None:
        """Run pg_ctl on the cluster (as the postgres OS user when we are root)."""
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        command = ["pg_ctl", "-D", str(self.folder / "data"), "-o", options, "-w", *args]
        subprocess.run(
            [*_as_postgres(), *command, "-l", str(self.folder / "server.log")],
            check=check,
            capture_output=True,
            timeout=60,
        )


def _as_postgres() -> list[str]:
    """initdb and postgres refuse to run as root: run them as the postgres OS user then."""
    return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def private_server() -> Iterator[PrivateServer]:
    """A fresh cluster on a free port with a `corral` database; stopped and removed after."""
    if shutil.which("initdb") is None or shutil.which("pg_ctl") is None:
        reason = "initdb and pg_ctl are not on PATH: no private PostgreSQL server"
        if os.environ.get("CI") == "true":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    # Not under tmp_path: pytest keeps that private to this user, and the server may run
    # as another (postgres).
    folder = Path(tempfile.mkdtemp(prefix="corral-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres")
    initdb = ["initdb", "-D", str(folder / "data"), "-A", "trust", "-U", "postgres", "--no-sync"]
    subprocess.run(
        [*_as_postgres(), *initdb],
        check=True,
        capture_output=True,
        timeout=120,
    )
    server = PrivateServer(folder, _free_port())
    server.ctl("start")
    import psycopg  # only the tests with a private server need it

    try:
        with psycopg.connect(server.url.replace("/corral", "/postgres"), autocommit=True) as conn:
            conn.execute("CREATE DATABASE corral")
        yield server
    finally:
        server.ctl("-m", "immediate", "stop", check=False)  # it may be stopped already
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(params=["sqlite", "postgresql"])
def any_pool(request: pytest.FixtureRequest) -> Pool:
    """The orchestrator harness on each store."""
    pool: Pool = request.getfixturevalue("pool" if request.param == "sqlite" else "pg_pool")
    return pool


def freeze_outside_a_write(runner: subprocess.Popen[bytes], db: str) -> None:
    """SIGSTOP the runner at a moment it holds no write of the store: a runner frozen in the
    middle of one would keep the store's write queue (its `.lock` flock) from every other
    writer, this test's reconcile pass too, until it is thawed."""
    frozen = psutil.Process(runner.pid)
    fd = os.open(db + ".lock", os.O_RDWR)
    try:
        while True:
            runner.send_signal(signal.SIGSTOP)
            wait_until(lambda: frozen.status() == psutil.STATUS_STOPPED, 10)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                runner.send_signal(signal.SIGCONT)  # frozen inside a write: try again
                continue
            fcntl.flock(fd, fcntl.LOCK_UN)
            return
    finally:
        os.close(fd)
