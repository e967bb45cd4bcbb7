"""`corral schedule ...` through the CLI: bad input is one line and writes nothing; preview
writes nothing; the commands' JSON; `corral ready` starts without the cron parser."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from corral import EventFilter, open_store

ADD = ("schedule", "add", "nightly", "--title", "Update dependencies", "--kind", "code")


@pytest.mark.parametrize(
    ("flags", "line"),
    [
        (("--cron", "0 0 0 31 2 *"), "cron: expected an expression that fires"),
        (("--cron", "0 60 * * * *"), "cron: expected a valid minute field"),
        (("--cron", "not cron at all"), "cron: expected five fields"),
        (("--cron", "0 0 * *"), "cron: expected five fields"),
        (("--cron", "0 0 0 * * * 2100"), "cron: expected years from 1970 to 2099"),
        (("--cron", "* * * * * *", "--timezone", "Europe/Pariss"), "timezone: expected an IANA"),
        (("--cron", "* * * * * *", "--overlap", "queue"), "overlap: expected one of skip"),
        (("--cron", "* * * * * *", "--max-catchup", "0"), "max_catchup: expected a whole"),
        (("--cron", "* * * * * *", "--catchup-window", "soon"), "catchup_window: expected"),
        (("--cron", "* * * * * *", "--payload", "[1]"), "payload: expected a JSON object"),
    ],
)
def test_bad_input_is_one_line_naming_the_field_exit_2_and_nothing_written(cli, flags, line):  # type: ignore[no-untyped-def]
    """Refused before the store is written: no schedule, no event."""
    cli("init")
    result = cli(*ADD, *flags)
    assert (2, 1) == (result.code, len(result.err.splitlines()))
    assert result.err.startswith(f"corral: error: {line}"), result.err
    assert [] == json.loads(cli("schedule", "list", "--json").out)
    assert [] == json.loads(cli("events", "--json").out)


def test_preview_writes_nothing(cli):  # type: ignore[no-untyped-def]
    """Preview of a schedule and of an expression: times and keys, the store unchanged."""
    cli("init")
    assert 0 == cli(*ADD, "--cron", "0 30 2 * * *", "--timezone", "Europe/Paris").code
    before = _snapshot(cli.db)
    shown = cli("schedule", "preview", "nightly", "--count", "2", "--from", "2030-03-30", "--json")
    assert [
        {"fire_at": "2030-03-30T01:30:00+00:00", "key": "schedule:nightly:2030-03-30T01:30:00Z"},
        {"fire_at": "2030-03-31T01:00:00+00:00", "key": "schedule:nightly:2030-03-31T01:00:00Z"},
    ] == json.loads(shown.out)
    bare = cli("schedule", "preview", "--cron", "*/20 * * * * *", "--from", "2030-01-01T00:00:00Z")
    assert "2030-01-01 00:00:20Z" == bare.out.splitlines()[0]
    assert 2 == cli("schedule", "preview", "--cron", "0 0 0 31 2 *").code
    assert before == _snapshot(cli.db)


@pytest.mark.parametrize(
    ("expr", "first"),
    [
        ("30 2 * * *", "2030-01-01 02:30:00Z"),  # five fields, as in a crontab
        ("0 30 2 * * *", "2030-01-01 02:30:00Z"),
        ("0 30 2 * * * 2031", "2031-01-01 02:30:00Z"),
    ],
)
def test_five_six_and_seven_fields_are_previewed(cli, expr, first):  # type: ignore[no-untyped-def]
    """The three shapes of docs/schedules.md, as written there."""
    cli("init")
    shown = cli("schedule", "preview", "--cron", expr, "--from", "2030-01-01T00:00:00Z")
    assert (0, first) == (shown.code, shown.out.splitlines()[0])


def _snapshot(db: str) -> tuple[object, ...]:
    with open_store(db) as store:
        return (
            [s.to_dict() for s in store.schedules.list_schedules()],
            store.schedules.schedule_fires("nightly", 100),
            store.tasks.task_counts(),
            len(store.events.list_events(EventFilter(limit=1000))),
        )


def test_the_commands_in_order_with_json(cli):  # type: ignore[no-untyped-def]
    """add, trigger, show, pause with a note, list, resume, backfill twice, remove."""
    cli("init")
    added = json.loads(cli(*ADD, "--cron", "0 30 2 * * *", "--overlap", "allow", "--json").out)
    assert ("nightly", "allow", 100, False) == (
        added["id"],
        added["overlap"],
        added["max_catchup"],
        added["paused"],
    )
    fired = json.loads(cli("schedule", "trigger", "nightly", "--json").out)
    assert ("created", "ready") == (fired["outcome"], fired["task_status"])
    task = json.loads(cli("show", fired["task_id"], "--json").out)
    assert ("Update dependencies", "code", "nightly") == (
        task["title"],
        task["kind"],
        task["labels"]["schedule_id"],
    )
    shown = json.loads(cli("schedule", "show", "nightly", "--json").out)
    assert [fired["key"]] == [f["key"] for f in shown["fires"]]
    assert 0 == cli("schedule", "pause", "nightly", "--note", "freeze").code
    assert 1 == cli("schedule", "pause", "nightly").code
    (listed,) = json.loads(cli("schedule", "list", "--json").out)
    assert (True, "freeze", 3) == (
        listed["paused"],
        listed["pause_note"],
        len(listed["next_fires"]),
    )
    assert "paused: freeze" in cli("schedule", "list").out
    assert 2 == cli("schedule", "resume", "nightly", "--catch-up", "--skip-missed").code
    assert 0 == cli("schedule", "resume", "nightly", "--skip-missed").code
    window = ("--from", "2029-12-01T00:00:00Z", "--to", "2029-12-04T00:00:00Z")
    assert 3 == len(json.loads(cli("schedule", "backfill", "nightly", *window, "--json").out))
    assert [] == json.loads(cli("schedule", "backfill", "nightly", *window, "--json").out)
    assert 0 == cli("schedule", "remove", "nightly").code
    gone = cli("schedule", "show", "nightly")
    assert (2, "corral: error: schedule 'nightly' not found") == (gone.code, gone.err.strip())
    assert 4 == len(json.loads(cli("list", "--json").out))  # its tasks stay


@pytest.mark.parametrize("words", [("reconcile",), ("orchestrator", "reconcile")])
def test_reconcile_fires_due_schedules_and_reports_them(cli, words):  # type: ignore[no-untyped-def]
    """With no orchestrator, `corral reconcile` (seed 000: `corral orchestrator reconcile`)
    makes the fires that are due."""
    cli("init")
    cli(*ADD, "--cron", "* * * * * *", "--overlap", "allow")
    for _ in range(100):  # each run takes a fraction of the second between two fires
        report = json.loads(cli(*words, "--json").out)
        if report["fires_created"]:
            break
    assert report["fires_created"] >= 1
    assert report["fires_created"] == len(json.loads(cli("list", "--json").out))


def test_ready_starts_without_the_cron_parser(tmp_path: Path, cli) -> None:  # type: ignore[no-untyped-def]
    """`python -X importtime` of `corral ready` lists neither cronsim nor the scheduler."""
    cli("init")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
    env["CORRAL_DB"] = cli.db
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "corral.cli.main", "ready"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
        check=True,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert {"cronsim", "corral.model.cron", "corral.usecases.schedules"}.isdisjoint(imported)
    assert "corral.store.queries" in imported  # the check sees the store's modules
    assert "corral.store.schedules" not in imported  # a repository loads on first use
