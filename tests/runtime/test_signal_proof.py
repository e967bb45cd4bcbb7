"""corral signals only its own processes: a row naming the pid of an unrelated process
(anyone who can write the store can write one) makes no signal reach it
(corral.foundation.processes)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from tests.conftest import CORRAL, finished_run, store_url

import corral
from corral import NewWorker, Refused, Store, SystemClock, open_store
from corral.foundation.process_keys import key_digest, new_key
from corral.foundation.processes import started_at
from corral.runtime.pool import control
from corral.runtime.worker.executor import end_marked_processes


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process of the same user, which must survive the test."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc
    proc.kill()
    proc.wait()


def _survives(proc: subprocess.Popen[bytes]) -> bool:
    """Whether `proc` is still running half a second on (a signal kills it well before)."""
    try:
        proc.wait(timeout=0.5)
    except subprocess.TimeoutExpired:
        return True
    return False


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
@pytest.mark.parametrize("flags", [[], ["--graceful"]])
def test_worker_stop_refuses_a_registered_pid_that_is_not_a_corral_worker(
    dialect: str,
    flags: list[str],
    request: pytest.FixtureRequest,
    tmp_path: Path,
    victim: subprocess.Popen[bytes],
) -> None:
    """`worker register --pid VICTIM` then `worker stop`: exit 1, one line, the victim lives."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DB"] = store_url(dialect, request, tmp_path)

    def corral(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [CORRAL, *args], env=env, capture_output=True, text=True, timeout=60, check=False
        )

    assert 0 == corral("init").returncode
    registered = corral("worker", "register", "--name", "w1", "--pid", str(victim.pid), "--json")
    worker_id = json.loads(registered.stdout)["worker"]["id"]
    stop = corral("worker", "stop", worker_id, *flags)
    assert 1 == stop.returncode
    assert [
        f"corral: error: process {victim.pid} is not provably worker {worker_id} (not this "
        "user's, or its environment holds no CORRAL_WORKER_KEY whose hash the worker "
        "recorded): not signalled"
    ] == stop.stderr.splitlines()
    assert _survives(victim)


@pytest.mark.parametrize("pool_of", ["pool", "pg_pool"])
def test_an_orchestrator_neither_adopts_nor_stops_a_fake_slot_holding_a_victims_pid(
    pool_of: str, request: pytest.FixtureRequest, victim: subprocess.Popen[bytes]
) -> None:
    """Fake `slot-1` and `slot-2` rows with victims' pids (one live worker a pid: two
    victims): the orchestrator starts its own slot-1, leaves the victims alone at start (as
    a surplus too) and at stop."""
    pool: Any = request.getfixturevalue(pool_of)
    second = subprocess.Popen(["sleep", "300"])

    def end_second() -> None:
        second.kill()
        second.wait()

    request.addfinalizer(end_second)
    for name, pid in (("slot-1", victim.pid), ("slot-2", second.pid)):
        fake = pool.corral("worker", "register", "--name", name, "--pid", str(pid))
        assert 0 == fake.returncode, fake.stderr
    pool.start(workers=1)
    pool.wait_running(1)
    assert victim.pid != pool.status()["slots"][0]["pid"]
    assert 2 == pool.log().count("worker.not_ours worker_id=")
    stop = pool.corral("orchestrator", "stop")
    assert 0 == stop.returncode, stop.stderr
    assert _survives(victim)
    assert _survives(second)


# -- issue 29: decoys that carry corral's variables, imitate its command lines, or belong
# -- to another user. Only the key corral generated at spawn, in a process of its own
# -- user, proves a process is corral's (corral.foundation.processes).

NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
NOBODY_UID = 65534


def every_variable(db: str, run_id: str) -> dict[str, str]:
    """Every variable corral gives a task or a worker, naming store `db` and run `run_id`
    (keys included: random ones, whose hash no row records)."""
    return {
        "CORRAL_DB": db,
        "CORRAL_RUN_ID": run_id,
        "CORRAL_RUN_KEY": new_key(),
        "CORRAL_TASK_ID": "t-decoy",
        "CORRAL_WORKER_ID": "w-decoy",
        "CORRAL_WORKER_NAME": "w1",
        "CORRAL_WORKER_KEY": new_key(),
        "CORRAL_CLAIM_TOKEN": "1",
        "CORRAL_NAMESPACE": "default",
    }


@pytest.fixture
def decoys() -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start decoys (`argv` with `env` added to this environment, in sessions of their own;
    `nobody=True`: as user nobody, returned once it runs as nobody); all killed after."""
    started: list[subprocess.Popen[bytes]] = []

    def start(
        *argv: str, env: dict[str, str] | None = None, nobody: bool = False
    ) -> subprocess.Popen[bytes]:
        if nobody and os.geteuid() != 0:  # .ci/unprivileged's run: root's run covers it
            pytest.skip("starting a process of another user takes root")
        command = [*NOBODY, *argv] if nobody else list(argv)
        proc = subprocess.Popen(command, env={**os.environ, **(env or {})}, start_new_session=True)
        started.append(proc)
        if nobody:  # setpriv changes its user, then execs: wait for both
            _until(lambda: _runs_as_nobody(proc.pid, argv[0]))
        return proc

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def _runs_as_nobody(pid: int, program: str) -> bool:
    process = psutil.Process(pid)
    return NOBODY_UID == process.uids().real and program == process.name()


def _until(predicate: Callable[[], bool], timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def _sleeper_imitating(name: str) -> list[str]:
    """A process whose command line reads `... corral worker start --name NAME`."""
    return [sys.executable, "-c", SLEEP, "corral", "worker", "start", "--name", name]


SLEEP = "import time; time.sleep(120)"


def _forge(store: Store, name: str, pid: int, *, key_hash: str | None) -> str:
    """A worker row naming `pid`, its start time copied from /proc, as any store writer can
    write one; its id."""
    spec = NewWorker(name=name, pid=pid, pid_started_at=started_at(pid), key_hash=key_hash)
    return corral.register(store, spec).worker.id


def test_the_maintenance_pass_ends_no_decoy_carrying_every_corral_variable(
    cli: Any, decoys: Callable[..., subprocess.Popen[bytes]]
) -> None:
    """Decoys naming this store and a finished run (with a wrong runs key, without one), a
    run the store does not know, or a running one: `corral status` lists none, `corral
    reconcile` ends none."""
    assert 0 == cli("init").code
    key = new_key()
    run_id = finished_run(cli.db, key)
    without_key = every_variable(cli.db, run_id)
    del without_key["CORRAL_RUN_KEY"]
    unknown = every_variable(cli.db, "r-never-was") | {"CORRAL_RUN_KEY": key}
    found = [
        decoys("sleep", "60", env=every_variable(cli.db, run_id)),
        decoys("sleep", "60", env=without_key),
        decoys("sleep", "60", env=unknown),
        decoys(*_sleeper_imitating("w"), env=every_variable(cli.db, run_id)),
    ]
    assert [] == json.loads(cli("status", "--json").out)["leftovers"]
    report = json.loads(cli("reconcile", "--json").out)
    assert (0, [True] * 4) == (report["leftovers_ended"], [_survives(p) for p in found])


def test_the_maintenance_pass_never_ends_another_users_process_even_with_the_key(
    cli: Any, decoys: Callable[..., subprocess.Popen[bytes]]
) -> None:
    """A process of user nobody holding the finished run's id and its right runs key lives
    on (corral runs as root here: it could signal it, and must not)."""
    assert 0 == cli("init").code
    key = new_key()
    run_id = finished_run(cli.db, key)
    env = every_variable(cli.db, run_id) | {"CORRAL_RUN_KEY": key}
    theirs = decoys("sleep", "60", env=env, nobody=True)
    report = json.loads(cli("reconcile", "--json").out)
    assert (0, True) == (report["leftovers_ended"], _survives(theirs))


def test_a_dead_workers_recovery_ends_only_its_runs_processes_holding_its_key(
    tmp_path: Path, decoys: Callable[..., subprocess.Popen[bytes]]
) -> None:
    """The processes of an unfinished run of a dead worker (as a supervisor or a restarted
    runner ends them): the one holding the runs key is ended; a decoy with the run id but
    another key, and another user's process with the right key, live on."""
    key, db = new_key(), str(tmp_path / "corral.db")
    env = every_variable(db, "r-of-a-dead-worker")
    ours = decoys("sleep", "60", env=env | {"CORRAL_RUN_KEY": key})
    decoy = decoys("sleep", "60", env=env)
    theirs = decoys("sleep", "60", env=env | {"CORRAL_RUN_KEY": key}, nobody=True)
    ended = end_marked_processes(
        "r-of-a-dead-worker", key_digest(key), clock=SystemClock(), grace_s=5.0
    )
    assert (1, -signal.SIGTERM) == (ended, ours.wait(timeout=10))
    assert _survives(decoy)
    assert _survives(theirs)


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
@pytest.mark.parametrize("forged_hash", [None, key_digest("another key")])
def test_worker_stop_spares_a_decoy_imitating_a_runner_behind_a_forged_row(
    dialect: str,
    forged_hash: str | None,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    decoys: Callable[..., subprocess.Popen[bytes]],
) -> None:
    """A process whose command line is `corral worker start --name w1`, carrying every
    variable, behind a row with its pid and start time (and no hash, or another key's):
    `worker stop` exits 1, with --graceful too, and it lives."""
    db = store_url(dialect, request, tmp_path)
    decoy = decoys(*_sleeper_imitating("w1"), env=every_variable(db, "r-x"))
    store = open_store(db)
    try:
        forged = _forge(store, "w1", decoy.pid, key_hash=forged_hash)
        codes = [control_stop(store, forged, graceful) for graceful in (False, True)]
    finally:
        store.close()
    assert (["refused"] * 2, True) == (codes, _survives(decoy))


def test_worker_stop_never_signals_another_users_process_even_with_the_key(
    tmp_path: Path, decoys: Callable[..., subprocess.Popen[bytes]]
) -> None:
    """A row naming a process of user nobody that holds the very key whose hash the row
    records: refused, and the process lives."""
    key = new_key()
    theirs = decoys("sleep", "60", env={"CORRAL_WORKER_KEY": key}, nobody=True)
    store = open_store(str(tmp_path / "corral.db"))
    try:
        worker_id = _forge(store, "w1", theirs.pid, key_hash=key_digest(key))
        code = control_stop(store, worker_id, False)
    finally:
        store.close()
    assert ("refused", True) == (code, _survives(theirs))


def control_stop(store: Store, worker_id: str, graceful: bool) -> str:
    """`worker stop`'s use case: "refused", or the signal it sent."""
    try:
        return str(control.stop_worker(store, worker_id, graceful=graceful).signal)
    except Refused:
        return "refused"


@pytest.mark.parametrize("pool_of", ["pool", "pg_pool"])
def test_an_orchestrator_spares_decoys_imitating_its_workers_behind_forged_rows(
    pool_of: str,
    request: pytest.FixtureRequest,
    decoys: Callable[..., subprocess.Popen[bytes]],
) -> None:
    """`slot-1`: a process imitating `corral worker start --name slot-1` with every
    variable; `slot-2`: another user's process holding the key its row's hash names. Both
    rows carry the pid and the start time: neither is adopted, stopped as a surplus, or
    signalled at the stop; the orchestrator's own worker starts, and stops."""
    pool: Any = request.getfixturevalue(pool_of)
    key = new_key()
    imitation = decoys(*_sleeper_imitating("slot-1"), env=every_variable(pool.db, "r-x"))
    theirs = decoys("sleep", "60", env={"CORRAL_WORKER_KEY": key}, nobody=True)
    _forge(pool.store, "slot-1", imitation.pid, key_hash=key_digest(new_key()))
    _forge(pool.store, "slot-2", theirs.pid, key_hash=key_digest(key))
    pool.start(workers=1)
    pool.wait_running(1)
    own = pool.status()["slots"][0]["pid"]
    assert imitation.pid != own
    assert 2 == pool.log().count("worker.not_ours worker_id=")
    stop = pool.corral("orchestrator", "stop")
    assert 0 == stop.returncode, stop.stderr
    assert not psutil.pid_exists(own) or psutil.Process(own).status() == psutil.STATUS_ZOMBIE
    assert _survives(imitation)
    assert _survives(theirs)


def test_a_loop_started_with_a_key_and_registered_by_it_is_stopped(
    cli: Any, decoys: Callable[..., subprocess.Popen[bytes]]
) -> None:
    """A program started with CORRAL_WORKER_KEY, registered by `worker register --pid` run
    with the same key (as a loop's own command inherits it): `worker stop` sends SIGQUIT."""
    assert 0 == cli("init").code
    key = new_key()
    loop = decoys("sleep", "60", env={"CORRAL_WORKER_KEY": key})
    registered = cli(
        "worker",
        "register",
        "--name",
        "loop-1",
        "--pid",
        str(loop.pid),
        "--json",
        env={"CORRAL_WORKER_KEY": key},
    )
    stop = cli("worker", "stop", json.loads(registered.out)["worker"]["id"])
    assert (0, -signal.SIGQUIT) == (stop.code, loop.wait(timeout=10))


@pytest.mark.parametrize("forged_hash", [None, key_digest("another key")])
def test_orchestrator_stop_spares_a_decoy_imitating_an_orchestrator_behind_a_forged_row(
    forged_hash: str | None, tmp_path: Path, decoys: Callable[..., subprocess.Popen[bytes]]
) -> None:
    """A process whose command line is `corral orchestrator start`, carrying a key of its
    own, holds the state row (taken with its pid, and no hash or another key's):
    `orchestrator stop` is refused and it lives."""
    imitation = [sys.executable, "-c", SLEEP, "corral", "orchestrator", "start"]
    decoy = decoys(*imitation, env={"CORRAL_ORCHESTRATOR_KEY": new_key()})
    store = open_store(str(tmp_path / "corral.db"))
    try:
        seen = store.orchestrators.get_orchestrator()
        store.orchestrators.acquire_orchestrator(
            pid=decoy.pid, host=os.uname().nodename, config={}, seen=seen, key_hash=forged_hash
        )
        with pytest.raises(Refused, match="is not provably corral's orchestrator"):
            control.stop_orchestrator(store, graceful=False, kill_timeout_s=1.0)
    finally:
        store.close()
    assert _survives(decoy)
