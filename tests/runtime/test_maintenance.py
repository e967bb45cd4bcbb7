"""The maintenance pass (runtime/maintenance.py): `corral reconcile` runs all of it once,
with real processes and a real store; a pass runs only the parts that are due."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.conftest import finished_run, run_under

import corral
from corral import (
    FakeClock,
    NewTask,
    NewWorker,
    ReconcileReport,
    Settings,
    Store,
    WorkerStatus,
    open_store,
)
from corral.foundation.process_keys import new_key
from corral.runtime.maintenance import Due, MaintenanceReport, Place, run_once
from corral.runtime.pool.upkeep import HOST, SCHEDULES


@contextmanager
def marked_process(**env: str) -> Iterator[subprocess.Popen[bytes]]:
    """A `sleep 60` in a session of its own with `env` added to this one's; killed after."""
    proc = subprocess.Popen(["sleep", "60"], env={**os.environ, **env}, start_new_session=True)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_reconcile_ends_a_leftover_process_of_its_store(cli: Any) -> None:
    """A process of this store's finished run, holding the runs key its worker recorded:
    ended by SIGTERM, counted in `leftovers_ended`."""
    assert 0 == cli("init").code
    key = new_key()
    run_id = finished_run(cli.db, key)
    with marked_process(CORRAL_DB=cli.db, CORRAL_RUN_ID=run_id, CORRAL_RUN_KEY=key) as stray:
        report = json.loads(cli("reconcile", "--json").out)
        assert -signal.SIGTERM == stray.wait(timeout=10)
    assert 1 == report["leftovers_ended"]
    assert [] == report["failures"]


def test_reconcile_says_how_many_leftovers_it_ended(cli: Any) -> None:
    """The text output names the leftovers ended among its counts."""
    assert 0 == cli("init").code
    key = new_key()
    run_id = finished_run(cli.db, key)
    with marked_process(CORRAL_DB=cli.db, CORRAL_RUN_ID=run_id, CORRAL_RUN_KEY=key):
        out = cli("reconcile").out
    assert "leftovers ended: 1" in out


def test_reconcile_never_signals_a_process_it_cannot_prove_is_its_stores(
    cli: Any, tmp_path: Path
) -> None:
    """Unmarked, marked with another store, or marked with a run still running here: each
    process lives on, and none is counted."""
    store = open_store(cli.db)
    try:
        worker = corral.register(store, NewWorker(name="w")).worker
        task = corral.enqueue(store, NewTask(title="running"))
        claim = corral.claim(store, task.id, worker.id)
        run = store.runs.start_run(run_under(claim, transcript_path=None, stderr_path=None))
    finally:
        store.close()
    other = str(tmp_path / "other.db")
    with (
        marked_process() as unmarked,
        marked_process(CORRAL_DB=other, CORRAL_RUN_ID="r-of-another-store") as elsewhere,
        marked_process(CORRAL_DB=cli.db, CORRAL_RUN_ID=run.id) as running,
    ):
        report = json.loads(cli("reconcile", "--json").out)
        assert [None, None, None] == [p.poll() for p in (unmarked, elsewhere, running)]
    assert 0 == report["leftovers_ended"]


def test_reconcile_runs_retention_with_the_configured_ages(cli: Any) -> None:
    """A task finished longer ago than `retention.finished_after` is deleted by the pass,
    and its count reported."""
    task_id = cli("add", "old news").out.strip()
    assert 0 == cli("cancel", task_id).code
    env = {"CORRAL_RETENTION_FINISHED_AFTER_S": "0.001"}
    report = json.loads(cli("reconcile", "--json", env=env).out)
    assert 1 == report["pruned_tasks"]
    assert 2 == cli("show", task_id).code  # not found: deleted


def test_a_pass_runs_only_the_parts_that_are_due(tmp_path: Path, clock: FakeClock) -> None:
    """A host-only pass (a standby's) repairs nothing, fires nothing and prunes nothing:
    those parts are absent from its report."""
    store = open_store(str(tmp_path / "corral.db"), clock=clock)
    try:
        report = run_once(
            store,
            settings=Settings(),
            place=Place(db=store.url, repo=None),
            clock=clock,
            log=logging.getLogger("test.maintenance"),
            due=HOST,
        )
    finally:
        store.close()
    assert (None, None, None) == (report.reconciled, report.fired, report.retention)
    expected = {"tmp_dirs_removed": 0, "leftovers_ended": 0}
    assert expected == report.counts()


def test_a_named_folder_that_is_no_repository_is_refused_before_the_pass(
    cli: Any, tmp_path: Path
) -> None:
    """`reconcile --repo` outside git: exit 2 and one line before any part runs (issue 29:
    the pass changed state, then failed)."""
    assert 0 == cli("init").code
    result = cli("reconcile", "--repo", str(tmp_path), "--json")
    assert (2, "") == (result.code, result.out)
    assert 1 == len(result.err.strip().splitlines())
    assert result.err.startswith("corral: error: repo: expected a folder inside a git repository")


def test_the_repair_runs_only_when_due_and_counts_what_reconcile_did(
    store: Store, clock: FakeClock, settings: Settings
) -> None:
    """A silent worker: a schedules-only pass leaves it alone, a repair pass marks it
    stale and reports reconcile's count (each store)."""
    worker = corral.register(store, NewWorker(name="silent"), settings=settings).worker
    registered = store.workers.get_worker(worker.id).status
    clock.advance(1.5 * settings.heartbeat_interval_s)

    def run(due: Due) -> MaintenanceReport:
        place = Place(db=store.url)
        log = logging.getLogger("test.maintenance")
        return run_once(store, settings=settings, place=place, clock=clock, log=log, due=due)

    assert None is run(SCHEDULES).reconciled
    assert registered == store.workers.get_worker(worker.id).status
    repaired = run(Due(repair=True, schedules=False, host=False, retention=False))
    assert ReconcileReport(workers_stale=1) == repaired.reconciled
    assert WorkerStatus.STALE == store.workers.get_worker(worker.id).status
