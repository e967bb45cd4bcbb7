"""The listings' paging and the worker heartbeat's figures as users type them: fresh
`corral` processes on a SQLite store, on PostgreSQL, and over HTTP (CORRAL_DB the URL of
a real `corral serve` on loopback, an operator token)."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import run_under
from tests.server.conftest import CORRAL, Server

import corral
from corral import NewTask, Store, open_store
from corral.model.workers import NewWorker

TASKS = 11


class Cli:
    """`corral ARGS` against one store, and that store opened in the test to fill it."""

    def __init__(self, env: dict[str, str], db: str) -> None:
        self.env = env
        self.store: Store = open_store(db)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*CORRAL, *args], env=self.env, capture_output=True, text=True, check=False
        )

    def json(self, *args: str) -> Any:
        done = self.run(*args, "--json")
        assert 0 == done.returncode, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(params=["sqlite", "postgresql", "http"])
def cli(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cli]:
    """A CLI on each store: a local SQLite file, a PostgreSQL schema, or a served store."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    server = None
    if request.param == "http":
        server = Server(tmp_path)
        token = server.token("operator")
        server.start()
        made = Cli({**env, "CORRAL_DB": server.url, "CORRAL_TOKEN": token}, server.db)
    else:
        db = request.getfixturevalue("pg_url") if request.param == "postgresql" else None
        db = db or str(tmp_path / "corral.db")
        made = Cli({**env, "CORRAL_DB": db}, db)
    _fill(made.store)
    yield made
    made.store.close()
    if server is not None:
        server.close()


def _fill(store: Store) -> None:
    """TASKS tasks of three priorities, three labelled workers, one with a run per task."""
    for n in range(TASKS):
        corral.enqueue(store, NewTask(title=f"t{n}", priority=n % 3))
    spec = {"hostname": "h1", "max_concurrent": 4}
    holder = corral.register(store, NewWorker(name="a", labels={"team": "x"}, **spec)).worker
    corral.register(store, NewWorker(name="b", queues=("q",), hostname="h2"))
    corral.register(store, NewWorker(name="c", kinds=("code",), labels={"team": "y"}))
    corral.heartbeat(store, holder.id)
    for task in store.tasks.list_tasks(corral.TaskFilter(limit=3)):
        claim = corral.claim(store, task.id, holder.id)
        store.runs.start_run(run_under(claim, transcript_path=None, stderr_path=None))


def _walk(cli: Cli, *command: str, limit: int = 3) -> tuple[list[Any], int | None]:
    """Every item of a listing read page by page with --paged; the first page's total."""
    items: list[Any] = []
    after: list[str] = []
    total = None
    while True:
        page = cli.json(*command, "--paged", "--limit", str(limit), "--count", *after)
        assert ["items", "next", "total"] == sorted(page)
        items += page["items"]
        total = page["total"] if total is None else total
        if page["next"] is None:
            return items, total
        after = ["--after", page["next"]]


@pytest.mark.parametrize(
    "command",
    [("list",), ("ready",), ("events",), ("runs",), ("worker", "list")],
    ids="-".join,
)
def test_every_listing_pages_through_all_of_it_once(cli: Cli, command: tuple[str, ...]) -> None:
    """Walking a listing's pages yields exactly its whole unpaged list (the same JSON array
    shape as always), in order, each item once; --count says how many there are. (`events`
    prints the newest, oldest first: its pages walk back in time.)"""
    whole = cli.json(*command, "--limit", "1000")
    assert isinstance(whole, list) and whole
    paged, total = _walk(cli, *command)
    ids = [i["id"] for i in paged]
    if command == ("events",):  # pages from the newest back, each page oldest first
        ids = sorted(ids)
    assert [i["id"] for i in whole] == ids
    assert len(whole) == total


def test_pages_stay_whole_while_tasks_are_added(cli: Cli) -> None:
    """Tasks added between pages are read once, after the ones already there."""
    first = cli.json("list", "--paged", "--limit", "4")
    corral.enqueue(cli.store, NewTask(title="meanwhile"))
    rest, _ = _walk(cli, "list", "--after", first["next"], limit=5)
    ids = [t["id"] for t in first["items"] + rest]
    assert TASKS + 1 == len(set(ids)) == len(ids)
    assert "meanwhile" == rest[-1]["title"]


def test_the_worker_list_filters(cli: Cli) -> None:
    """--queue, --kind, --host and --label (every one given) select workers."""

    def names(*flags: str) -> list[str]:
        return [w["name"] for w in cli.json("worker", "list", *flags)]

    assert ["a", "b", "c"] == names("--queue", "q")
    assert ["a", "c"] == names("--queue", "other")
    assert ["a", "b", "c"] == names("--kind", "code")
    assert ["b"] == names("--host", "h2")
    assert ["a"] == names("--label", "team=x")
    assert [] == names("--label", "team=x", "--label", "gpu=1")
    assert ["a", "b", "c"] == names("--status", "starting", "busy")


def test_human_pages_end_with_how_to_read_the_next(cli: Cli) -> None:
    """A human page ends with the total when asked and the --after to type for the next."""
    done = cli.run("list", "--limit", "3", "--count")
    lines = done.stdout.splitlines()
    assert f"{TASKS} in all" == lines[-2]
    assert lines[-1].startswith("next page: --after ")
    after = lines[-1].split()[-1]
    assert cli.run("list", "--limit", "1", "--after", after).stdout.splitlines()[1].endswith(" t3")


@pytest.mark.parametrize(
    "args",
    [
        ("list", "--after", "not-a-cursor"),
        ("runs", "--after", "bGlzdDoy"),  # a cursor of `list`
        ("ready", "--after", "x" * 5000),
        ("events", "--after", "ZXZlbnRzOjE\x01"),
        ("worker", "list", "--limit", "0"),
        ("list", "--json", "--count"),
    ],
)
def test_a_bad_cursor_or_limit_is_one_line_and_exit_2(cli: Cli, args: tuple[str, ...]) -> None:
    """A cursor that is not one of the listing's, a bad limit, or --count on a bare JSON
    array: a one-line error naming the flag, exit 2, nothing printed."""
    done = cli.run(*args)
    assert (2, "") == (done.returncode, done.stdout)
    assert 1 == len(done.stderr.strip().splitlines())
    assert any(f in done.stderr for f in ("after:", "limit:", "count:")), done.stderr


def test_ready_says_when_it_stopped_at_its_default_limit(cli: Cli) -> None:
    """`ready` past its default page of 100 says so on stderr; the JSON stays an array."""
    for n in range(100 - TASKS + 3 + 1):
        corral.enqueue(cli.store, NewTask(title=f"more {n}"))
    done = cli.run("ready", "--json")
    assert 100 == len(json.loads(done.stdout))
    assert "stopped at its default limit of 100" in done.stderr
    assert "stopped" not in cli.run("ready", "--json", "--limit", "500").stderr


def test_worker_heartbeat_takes_the_figures_and_refuses_bad_ones(cli: Cli) -> None:
    """`worker heartbeat` records its figures (shown by `worker list` and `worker show`);
    a negative or non-finite one is refused with exit 2 and nothing written."""
    worker = cli.run("worker", "register", "--name", "bash").stdout.strip()
    figures = ("--cpu", "12.5", "--memory-mb", "30", "--agent-cpu", "150")
    more = ("--agent-memory-mb", "200", "--active", "1", "--completed", "2", "--failed", "1")
    assert 0 == cli.run("worker", "heartbeat", worker, *figures, *more).returncode
    before = cli.store.workers.get_worker(worker)
    for bad in (("--cpu", "-1"), ("--memory-mb", "inf"), ("--completed", "-2"), ("--cpu", "nan")):
        done = cli.run("worker", "heartbeat", worker, *bad)
        assert (2, 1) == (done.returncode, len(done.stderr.strip().splitlines())), done.stderr
        assert bad[0].strip("-").replace("-", "_") in done.stderr
    assert before == cli.store.workers.get_worker(worker)
    shown = cli.json("worker", "show", worker)
    assert (12.5, 30 << 20, 150.0, 200 << 20, 1, 2, 1) == (
        shown["cpu_percent"],
        shown["rss_bytes"],
        shown["agent_cpu_percent"],
        shown["agent_rss_bytes"],
        shown["reported_active"],
        shown["reported_completed_total"],
        shown["reported_failed_total"],
    )
    table = cli.run("worker", "list", "--host", before.hostname).stdout
    assert "150.0%" in table and "200.0M" in table
