"""corral signals only its own processes: a row naming the pid of an unrelated process
(anyone who can write the store can write one) makes no signal reach it (corral.processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import CORRAL, store_url


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
        f"corral: error: process {victim.pid} is not provably worker {worker_id} (not corral's "
        "runner named w1, nor marked CORRAL_WORKER_NAME=w1): not signalled"
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
