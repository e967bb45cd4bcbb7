"""Namespaces with real processes: runners of one namespace never take another's tasks,
registrations racing for one (namespace, host, pid) have exactly one winner, and the CLI
selects a namespace by flag or environment, refusing a bad name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import STORE_DIALECTS, store_url

CORRAL = str(Path(sys.executable).with_name("corral"))
RACERS = 6


def _env(db: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    return {**env, "CORRAL_DB": db, **extra}


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CORRAL, *args], env=env, capture_output=True, text=True, check=False, timeout=120
    )


def _ok(env: dict[str, str], *args: str) -> str:
    done = _run(env, *args)
    assert 0 == done.returncode, done.stderr
    return done.stdout


@pytest.fixture(params=STORE_DIALECTS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store of each dialect, made by `corral init`."""
    url = store_url(request.param, request, tmp_path)
    _ok(_env(url), "init")
    return url


def test_a_runner_works_through_its_namespace_and_leaves_the_others_tasks(db: str) -> None:
    """Runners started in team-a (`--once`, one after the other) run team-a's tasks;
    team-b's tasks, of higher priority, are still ready."""
    a, b = _env(db, CORRAL_NAMESPACE="team-a"), _env(db)
    ours = [json.loads(_ok(a, "add", f"a{n}", "--json"))["id"] for n in range(2)]
    theirs = [
        json.loads(_ok(b, "--namespace", "team-b", "add", f"b{n}", "--priority", "9", "--json"))[
            "id"
        ]
        for n in range(2)
    ]
    for _ in ours:
        _ok(a, "worker", "start", "--name", "r", "--exec", "true", "--once")
    done = {t["id"]: t["status"] for t in json.loads(_ok(a, "list", "--json"))}
    assert dict.fromkeys(ours, "done") == done
    listed = json.loads(_ok(b, "--namespace", "team-b", "list", "--json"))
    assert dict.fromkeys(theirs, "ready") == {t["id"]: t["status"] for t in listed}
    counts = {n["name"]: n for n in json.loads(_ok(b, "namespace", "list", "--json"))}
    assert ({"done": 2}, {"ready": 2}) == (counts["team-a"]["tasks"], counts["team-b"]["tasks"])


def test_of_racing_registrations_with_one_host_and_pid_exactly_one_wins(db: str) -> None:
    """Six processes register with the same host and pid at once: one worker, five refusals
    (exit 1, one line naming the live worker)."""
    env = _env(db)
    racers = [
        subprocess.Popen(
            [CORRAL, "worker", "register", "--name", f"r{n}", "--pid", "4321"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(RACERS)
    ]
    outcomes = [(p.wait(timeout=120), *p.communicate()) for p in racers]
    won = [out.strip() for code, out, _ in outcomes if code == 0]
    refused = [err.strip() for code, _, err in outcomes if code == 1]
    assert (1, RACERS - 1) == (len(won), len(refused))
    assert all(
        f"worker {won[0]} " in line and "is live with host" in line and "\n" not in line
        for line in refused
    )
    live = json.loads(_ok(env, "worker", "list", "--json"))
    assert won == [w["id"] for w in live]


@pytest.mark.parametrize("bad", ["Team", "a..b", "-x", "x" * 64, "a/b", "a b", ""])
def test_a_bad_namespace_is_a_usage_error_naming_the_flag(tmp_path: Path, bad: str) -> None:
    """A namespace that is not a name: exit 2, one line naming --namespace, nothing written."""
    db = str(tmp_path / "corral.db")
    _ok(_env(db), "init")
    by_flag = _run(_env(db), f"--namespace={bad}", "add", "x")
    assert 2 == by_flag.returncode
    assert by_flag.stderr.startswith("corral: error: --namespace: expected a name")
    assert 1 == len(by_flag.stderr.strip().splitlines())
    if bad:
        by_env = _run(_env(db, CORRAL_NAMESPACE=bad), "list")
        assert (2, by_flag.stderr) == (by_env.returncode, by_env.stderr.replace("list", "add"))
    assert [] == json.loads(_ok(_env(db), "list", "--json"))
