"""`corral status` beyond the orchestrator: what waits for people."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
import pytest
from tests.conftest import CORRAL, STORE_DIALECTS, store_url

from corral import NewTask, enqueue, open_store


def test_status_flags_reviews_waiting_too_long(cli) -> None:  # type: ignore[no-untyped-def]
    """A task in review longer than review_stale_after is named in `corral status`."""
    task = cli("add", "needs a look", "--review").out.strip()
    worker = cli("worker", "register", "--name", "w").out.strip()
    assert 0 == cli("claim", task, worker).code
    assert 0 == cli("done", task).code
    fresh = json.loads(cli("status", "--json").out)["reviews"]
    assert [(task, False)] == [(r["id"], r["stale"]) for r in fresh]
    stale_env = {"CORRAL_REVIEW_STALE_AFTER_S": "0"}
    assert f"reviews: 1 waiting (1 stale: {task})" in cli("status", env=stale_env).out


# -- corral status --watch, off a terminal (the screen itself: tests/runtime/test_status_watch.py)


@pytest.fixture(params=STORE_DIALECTS)
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A migrated store of each dialect, with one task ready."""
    url = store_url(request.param, request, tmp_path)
    with open_store(url) as store:
        enqueue(store, NewTask(title="waiting"))
    return url


@contextmanager
def watching(db: str, *args: str) -> Iterator[subprocess.Popen[str]]:
    """`corral status --watch ARGS` with its output a pipe; killed if the test leaves it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    proc = subprocess.Popen(
        [CORRAL, "status", "--watch", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**env, "CORRAL_DB": db},
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


def _lines_until(proc: subprocess.Popen[str], wanted: Callable[[list[str]], bool]) -> list[str]:
    """Lines of its output, read as they come, until `wanted(lines)`; blocking reads, each
    bounded by the process printing every interval (and the test's timeout)."""
    lines: list[str] = []
    assert proc.stdout is not None
    while not wanted(lines):
        line = proc.stdout.readline()
        assert line, f"output ended early: {lines}"
        lines.append(line)
    return lines


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_watch_into_a_pipe_prints_snapshot_after_snapshot_until_a_signal(
    db: str, stop: signal.Signals
) -> None:
    """Off a terminal, the status text repeats under `=== time ===` lines; SIGINT or SIGTERM
    ends it with 0 and nothing on stderr."""
    with watching(db, "--interval", "0.05") as proc:
        lines = _lines_until(proc, lambda got: sum(x.startswith("=== ") for x in got) == 3)
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=10)
    assert (0, "") == (proc.returncode, err)
    assert 2 == sum("tasks: ready 1" in line for line in lines)


def test_watch_json_prints_one_status_object_a_line(db: str) -> None:
    """`--json --watch`: each line is the object `corral status --json` prints."""
    with watching(db, "--json", "--interval", "0.05") as proc:
        lines = _lines_until(proc, lambda got: len(got) == 3)
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)
    assert 0 == proc.returncode
    assert [{"ready": 1}] * 3 == [json.loads(line)["tasks"] for line in lines]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--watch", "--interval", "0"], "interval"),
        (["--watch", "--interval", "soon"], "interval"),
        (["--watch", "--interval=0s"], "interval"),
        (["--interval", "1s"], "interval"),  # an interval without --watch
    ],
)
def test_a_bad_interval_is_one_line_and_exit_2(cli, args: list[str], field: str) -> None:  # type: ignore[no-untyped-def]
    """A zero, unreadable or orphan --interval: exit 2, one line naming it, nothing printed."""
    done = cli("status", *args)
    assert (2, "", 1) == (done.code, done.out, len(done.err.splitlines()))
    assert done.err.startswith(f"corral: error: {field}: expected")


def test_watch_outlives_a_store_outage(pg_url: str, pg_database: str) -> None:
    """The server refusing the watcher's connections is an `error` line each interval, not
    an exit; once it lets it in again, the status comes back."""
    role = f"watcher_{secrets.token_hex(4)}"
    admin = psycopg.connect(pg_database, autocommit=True)
    admin.execute(f"CREATE ROLE {role} LOGIN SUPERUSER")
    try:
        with open_store(pg_url) as store:
            enqueue(store, NewTask(title="waiting"))
        as_role = pg_url.replace("postgres@", f"{role}@", 1)
        with watching(as_role, "--json", "--interval", "0.1") as proc:
            _lines_until(proc, lambda got: len(got) == 1)
            admin.execute(f"ALTER ROLE {role} NOLOGIN")
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s",
                (role,),
            )
            down = _lines_until(proc, lambda got: bool(got) and "error" in json.loads(got[-1]))
            admin.execute(f"ALTER ROLE {role} LOGIN")
            back = _lines_until(proc, lambda got: bool(got) and "tasks" in json.loads(got[-1]))
            proc.send_signal(signal.SIGINT)
            proc.communicate(timeout=10)
        assert 0 == proc.returncode
        assert json.loads(down[-1])["error"].startswith("store unavailable, retrying every 100ms")
        assert {"ready": 1} == json.loads(back[-1])["tasks"]
    finally:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = %s", (role,)
        )
        admin.execute(f"DROP ROLE {role}")
        admin.close()


def test_status_shows_figures_only_of_runners_that_still_run(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """A worker's last heartbeat's CPU and memory are shown (`status`, `worker list`,
    `worker show`) while its pid is provably its runner; once that process is killed, or
    for a pid that does not hold the key the worker registered, they read null, though
    the worker is not yet found dead. A program registered without a key goes by its
    pid's start time alone."""
    key = secrets.token_hex(32)
    runner = subprocess.Popen(["sleep", "300"], env={**os.environ, "CORRAL_WORKER_KEY": key})
    decoy = subprocess.Popen(["sleep", "300"])  # alive, but it holds no key
    keyless = subprocess.Popen(["sleep", "300"])
    try:
        ids = {}
        for name, proc in (("runner", runner), ("decoy", decoy), ("keyless", keyless)):
            registered = cli(
                *("worker", "register", "--name", name, "--pid", str(proc.pid)),
                env={} if name == "keyless" else {"CORRAL_WORKER_KEY": key},
            )
            assert 0 == registered.code, registered.err
            ids[name] = registered.out.strip()
            beat = ("worker", "heartbeat", ids[name], "--cpu", "12.5", "--memory-mb", "30")
            assert 0 == cli(*beat).code

        def figures() -> dict[str, tuple[str, float | None, int | None]]:
            shown = {
                "status": json.loads(cli("status", "--json").out)["workers"],
                "list": json.loads(cli("worker", "list", "--json").out),
            }
            assert len({json.dumps(v, sort_keys=True) for v in shown.values()}) == 1
            one = json.loads(cli("worker", "show", ids["runner"], "--json").out)
            assert one in shown["status"]
            return {
                w["name"]: (w["status"], w["cpu_percent"], w["rss_bytes"]) for w in shown["list"]
            }

        measured = ("idle", 12.5, 30 * 1048576)
        assert {
            "runner": measured,
            "decoy": ("idle", None, None),
            "keyless": measured,
        } == figures()
        runner.kill()
        keyless.kill()
        runner.wait(timeout=10)
        keyless.wait(timeout=10)
        assert {"idle"} == {status for status, _, _ in figures().values()}
        assert {(None, None)} == {(cpu, rss) for _, cpu, rss in figures().values()}
    finally:
        for proc in (runner, decoy, keyless):
            proc.kill()
            proc.wait(timeout=10)
