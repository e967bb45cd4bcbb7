"""`corral events --follow` as a real process, against writers in real processes.

Four writer processes append 1,000 events while a follower prints them: each appears
exactly once, in the log's cursor order, on both stores. On a private PostgreSQL server
that is stopped and started under the follower, the events from before and after the
outage each appear once. Ctrl-C and SIGTERM end the follower with exit 0.
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from corral import EventFilter, NewTask, enqueue, open_store

from .conftest import Children, PrivateServer, wait_until

CORRAL = str(Path(sys.executable).with_name("corral"))
WRITERS, PER_WRITER = 4, 250

WRITE = """
from corral import NewTask, enqueue, open_store

with open_store(ARGS[0]) as store:
    barrier()
    for n in range(int(ARGS[1])):
        enqueue(store, NewTask(title=NAME + " " + str(n)))
"""


class FollowProcess:
    """`corral events --follow ARGS` running against `url`, its output in files."""

    def __init__(self, folder: Path, url: str, *args: str) -> None:
        n = len(list(folder.glob("follow-*.out")))
        self.out, self.err = folder / f"follow-{n}.out", folder / f"follow-{n}.err"
        env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
        env["CORRAL_DB"] = url
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(
                [CORRAL, "events", "--follow", *args], stdout=out, stderr=err, env=env
            )

    def lines(self) -> list[str]:
        """The whole lines printed so far."""
        text = self.out.read_text()
        return text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]

    def events(self) -> list[dict[str, Any]]:
        """The JSON events printed so far."""
        return [json.loads(line) for line in self.lines()]

    def wait_for(self, count: int, timeout_s: float = 60) -> None:
        """Until it printed `count` lines (fails early if it exited)."""

        def printed() -> bool:
            assert self.proc.poll() is None, self.err.read_text()
            return len(self.lines()) >= count

        wait_until(printed, timeout_s)

    def stop(self, signum: int = signal.SIGINT) -> int:
        """Send `signum`; its exit code."""
        self.proc.send_signal(signum)
        return self.proc.wait(timeout=10)


@pytest.fixture
def followers(tmp_path: Path):
    """Start follower processes; none outlives the test."""
    started: list[FollowProcess] = []

    def start(url: str, *args: str) -> FollowProcess:
        follower = FollowProcess(tmp_path, url, *args)
        started.append(follower)
        return follower

    yield start
    for follower in started:
        if follower.proc.poll() is None:
            follower.proc.kill()
            follower.proc.wait(timeout=10)


def _url(dialect: str, request: pytest.FixtureRequest, folder: Path) -> str:
    if dialect == "postgresql":
        return str(request.getfixturevalue("pg_url"))
    return str(folder / "corral.db")


def _cursor_order(url: str) -> list[int]:
    """Every event id in the order a follower must print them: (xid, id) on PostgreSQL."""
    if url.startswith("postgresql"):
        import psycopg

        with psycopg.connect(url) as conn:
            return [r[0] for r in conn.execute("SELECT id FROM events ORDER BY xid, id")]
    with open_store(url) as store:
        return [e.id for e in store.events.list_events(EventFilter(limit=1_000_000))]


@pytest.mark.parametrize("dialect", ["sqlite", "postgresql"])
def test_a_follower_prints_each_event_of_four_writers_once_in_order(
    dialect: str, request: pytest.FixtureRequest, tmp_path: Path, children: Children, followers
):
    """1,000 events from 4 processes: the follower prints every one, once, in cursor order."""
    url = _url(dialect, request, tmp_path)
    with open_store(url) as store:
        enqueue(store, NewTask(title="before"))  # the follower shows it first: it is ready
    follower = followers(url, "--json")
    follower.wait_for(1)
    for n in range(WRITERS):
        children.start(f"w{n}", WRITE, url, str(PER_WRITER))
    children.go()
    assert all(0 == f.code for f in children.finish().values())
    follower.wait_for(1 + WRITERS * PER_WRITER)
    assert 0 == follower.stop()

    printed = [e["id"] for e in follower.events()]
    assert _cursor_order(url) == printed
    assert "" == follower.err.read_text()


def test_a_follower_resumes_after_the_server_restarts_missing_and_repeating_nothing(
    private_server: PrivateServer, followers
):
    """Events written before the server stops and after it starts again each appear once."""
    url = private_server.url
    with open_store(url) as store:
        enqueue(store, NewTask(title="first"))
    follower = followers(url, "--json")
    follower.wait_for(1)
    with open_store(url) as store:
        for n in range(5):
            enqueue(store, NewTask(title=f"before {n}"))
    follower.wait_for(6)
    private_server.ctl("-m", "fast", "stop")
    wait_until(lambda: "store unavailable" in follower.err.read_text(), 30)
    private_server.ctl("start")
    with open_store(url) as store:
        for n in range(5):
            enqueue(store, NewTask(title=f"after {n}"))
    follower.wait_for(11)
    wait_until(lambda: "reachable again" in follower.err.read_text(), 30)
    assert 0 == follower.stop(signal.SIGTERM)

    assert _cursor_order(url) == [e["id"] for e in follower.events()]
    err = follower.err.read_text()
    assert "Traceback" not in err
    assert 2 == len(err.splitlines())


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_ends_a_follower_with_exit_0_and_no_traceback(
    signum: int, tmp_path: Path, followers
):
    """Ctrl-C or SIGTERM: exit 0, nothing on stderr."""
    url = str(tmp_path / "corral.db")
    with open_store(url) as store:
        enqueue(store, NewTask(title="one"))
    follower = followers(url)
    follower.wait_for(1)

    assert 0 == follower.stop(signum)
    assert "" == follower.err.read_text()
    assert "task.created" in follower.lines()[0]


def test_a_follower_prints_only_what_its_filters_select(tmp_path: Path, followers):
    """--task, --type and --since apply to the events printed first and to the new ones."""
    url = str(tmp_path / "corral.db")
    with open_store(url) as store:
        watched = enqueue(store, NewTask(title="watched"))
        enqueue(store, NewTask(title="other"))
    by_task = followers(url, "--json", "--task", watched.id)
    by_type = followers(url, "--json", "--type", "task.cancelled", "--since", "1h")
    by_task.wait_for(1)
    with open_store(url) as store:
        store.tasks.cancel(watched.id, actor="test", reason="enough")
    by_task.wait_for(2)
    by_type.wait_for(1)
    for follower in (by_task, by_type):
        assert 0 == follower.stop()

    assert ["task.created", "task.cancelled"] == [e["name"] for e in by_task.events()]
    assert {watched.id} == {e["task_id"] for e in by_task.events()}
    assert [("task.cancelled", "enough")] == [(e["name"], e["reason"]) for e in by_type.events()]


def test_a_follower_with_limit_0_prints_only_events_after_its_start(tmp_path: Path, followers):
    """--limit 0: none of the events before it started, then the new ones."""
    url = str(tmp_path / "corral.db")
    with open_store(url) as store:
        before = {enqueue(store, NewTask(title="before")).id for _ in range(3)}
        only_new = followers(url, "--json", "--limit", "0")
        written: list[str] = []

        def printed_a_new_one() -> bool:  # it shows nothing until it has started: keep writing
            written.append(enqueue(store, NewTask(title="after")).id)
            return bool(only_new.lines())

        wait_until(printed_a_new_one, 30)
    wait_until(lambda: written[-1] in {e["task_id"] for e in only_new.events()}, 30)
    assert 0 == only_new.stop()

    shown = [e["task_id"] for e in only_new.events()]
    assert not before & set(shown)
    assert written[written.index(shown[0]) :] == shown  # from its start on, every one


def test_begin_makes_from_now_on_mean_from_the_call(tmp_path: Path) -> None:
    """An event committed after `begin()` returns, before `run`'s thread reads anything, is
    handed over; one committed before it is not (a notifier's first notice, a pool's first
    task line)."""
    from corral.foundation.clock import SystemClock
    from corral.runtime.follow import Follower

    with open_store(f"sqlite:///{tmp_path / 'c.db'}") as store:
        enqueue(store, NewTask(title="before"))
        follower = Follower(
            store, EventFilter(names=("task.created",), limit=0), clock=SystemClock(),
            on_outage=lambda _: None, listen=False,
        )  # fmt: skip
        follower.begin()
        enqueue(store, NewTask(title="after"))
        follower.stop(catch_up=True)  # the run reads once, then returns
        seen: list[str] = []
        follower.run(lambda ev: seen.append(store.tasks.get_task(ev.task_id or "").title))
    assert ["after"] == seen
