"""Conformance: retention deletes finished tasks (with their runs, claims, reviews and
files), events and gone workers once old enough, and nothing younger, unfinished or still
named."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

import corral
from corral import FakeClock, NewRun, NotFound, Settings, Store, TaskStatus
from corral.model.events import EventFilter
from corral.store.location import runs_dir
from corral.usecases.retention import Ages, prune

NOT_OVER_HTTP = "retention runs beside the store, where the runs' files are"
DAY = 86_400.0


@pytest.fixture
def done(store: Store, settings: Settings, add: Callable[..., Any], worker: Callable[..., Any]):
    """A task claimed by a new worker, run (its output files and outbox made) and completed."""

    def make(title: str = "t", **fields: Any) -> tuple[str, list[str]]:
        task = add(title, **fields)
        holder = worker(f"w-{task.id}")
        claim = corral.claim(store, task.id, holder.id, settings=settings)
        folder = runs_dir(store.url)
        os.makedirs(folder, exist_ok=True)
        paths = [os.path.join(folder, f"{task.id}.{ext}") for ext in ("jsonl", "stderr", "outbox")]
        for path in paths:
            Path(path).write_text("output\n")
        store.runs.start_run(
            NewRun(task_id=task.id, worker_id=holder.id, token=claim.token, attempt=1,
                   prompt="p", command=("agent",), cwd="/", transcript_path=paths[0],
                   stderr_path=paths[1])
        )  # fmt: skip
        corral.complete(store, task.id, token=claim.token)
        corral.deregister(store, holder.id)
        return task.id, paths

    return make


def gone(store: Store, task_id: str) -> bool:
    try:
        store.tasks.get_task(task_id)
    except NotFound:
        return True
    return False


def test_finished_tasks_go_with_their_runs_and_files_and_nothing_younger(
    store: Store, clock: FakeClock, done: Callable[..., Any], add: Callable[..., Any]
) -> None:
    old, old_files = done("old")
    cancelled = add("cancelled").id
    corral.cancel(store, cancelled)
    waiting = add("still ready").id
    clock.advance(2 * DAY)
    young, young_files = done("young")
    outside = Path(runs_dir(store.url)).parent / "not-a-run.txt"
    outside.write_text("mine\n")

    pruned = prune(store, Ages(finished_s=DAY))

    assert (2, 1, 3) == (pruned.tasks, pruned.runs, pruned.files)
    assert gone(store, old) and gone(store, cancelled)
    assert not any(os.path.exists(p) for p in old_files)
    assert not gone(store, young) and all(os.path.exists(p) for p in young_files)
    assert TaskStatus.READY is store.tasks.get_task(waiting).status
    assert outside.exists()
    assert [] == store.runs.list_runs(task_id=old)


def test_a_task_waiting_for_a_person_is_never_pruned_however_old(
    store: Store,
    clock: FakeClock,
    settings: Settings,
    add: Callable[..., Any],
    worker: Callable[..., Any],
) -> None:
    """Waiting is not finished: a week-old waiting task stays, whatever the retention age."""
    task = add("asks").id
    claim = corral.claim(store, task, worker("w").id, settings=settings)
    corral.wait(store, task, reason="question: which one?", token=claim.token)
    clock.advance(7 * DAY)
    assert 0 == prune(store, Ages(finished_s=DAY)).tasks
    assert TaskStatus.WAITING is store.tasks.get_task(task).status


def test_a_task_something_kept_depends_on_stays_and_a_chain_goes_together(
    store: Store, clock: FakeClock, done: Callable[..., Any], add: Callable[..., Any]
) -> None:
    first, _ = done("first")
    second, _ = done("second", depends_on=(first,))
    base, _ = done("base")
    pending = add("pending", depends_on=(base,)).id
    clock.advance(2 * DAY)

    pruned = prune(store, Ages(finished_s=DAY), batch=1)

    assert 2 == pruned.tasks
    assert gone(store, first) and gone(store, second)
    assert not gone(store, base) and not gone(store, pending)


def test_a_task_changed_after_it_was_found_is_left_alone(
    store: Store, clock: FakeClock, add: Callable[..., Any]
) -> None:
    task = add("x").id
    corral.cancel(store, task)
    clock.advance(2 * DAY)
    cutoff = store.now() - timedelta(days=1)
    assert [task] == store.retention.prunable_tasks(cutoff, 10)
    corral.retry(store, task)  # cancelled -> ready, between the read and the delete
    assert 0 == store.retention.delete_tasks([task], cutoff).tasks
    assert TaskStatus.READY is store.tasks.get_task(task).status


def test_old_events_go_in_order_and_younger_ones_stay(
    store: Store, clock: FakeClock, add: Callable[..., Any]
) -> None:
    for n in range(5):
        add(f"old {n}")
    clock.advance(2 * DAY)
    young = add("young").id
    before = store.events.list_events(EventFilter(limit=1000))

    pruned = prune(store, Ages(events_s=DAY))

    after = store.events.list_events(EventFilter(limit=1000))
    assert len(before) - len(after) == pruned.events >= 5
    assert all(e.at >= store.now() - timedelta(days=1) for e in after)
    assert any(e.task_id == young for e in after)


def test_gone_workers_go_once_nothing_names_them(
    store: Store, clock: FakeClock, done: Callable[..., Any], worker: Callable[..., Any]
) -> None:
    task, _ = done("t")
    ran_it = store.tasks.get_task(task).worker_id or next(
        w.id for w in store.workers.list_workers() if w.name == f"w-{task}"
    )
    idle = corral.deregister(store, worker("idle").id).id
    live = worker("live").id
    clock.advance(8 * DAY)
    corral.heartbeat(store, live, settings=Settings())

    assert 1 == prune(store, Ages(workers_s=7 * DAY), dry_run=True).workers
    first = prune(store, Ages(workers_s=7 * DAY))
    assert 1 == first.workers  # the one that ran a task is named by its run and claim
    ids = {w.id for w in store.workers.list_workers()}
    assert idle not in ids and live in ids and ran_it in ids

    counted = prune(store, Ages(finished_s=DAY, workers_s=7 * DAY), dry_run=True)
    second = prune(store, Ages(finished_s=DAY, workers_s=7 * DAY))
    assert (counted.tasks, counted.workers) == (second.tasks, second.workers)
    assert (1, 1) == (second.tasks, second.workers)
    assert {live} == {w.id for w in store.workers.list_workers()}


def test_a_dry_run_counts_and_deletes_nothing(
    store: Store, clock: FakeClock, done: Callable[..., Any]
) -> None:
    task, files = done("t")
    clock.advance(10 * DAY)
    counted = prune(store, Ages(finished_s=DAY, events_s=DAY, workers_s=DAY), dry_run=True)
    assert counted.dry_run and 1 == counted.tasks and counted.events > 0
    assert 1 == counted.workers  # its run names it, and goes with its task first
    assert not gone(store, task) and all(os.path.exists(p) for p in files)


def test_a_dry_run_counts_what_the_pass_then_deletes(
    store: Store,
    clock: FakeClock,
    done: Callable[..., Any],
    add: Callable[..., Any],
    worker: Callable[..., Any],
) -> None:
    """A dry run's figures are the real pass's on the same rows: workers freed by the
    pass's task deletions, a chain held by a task staying at any distance, events."""
    for n in range(3):
        done(f"ran {n}")  # each frees the worker that ran it once it goes
    held, _ = done("held")
    middle, _ = done("middle", depends_on=(held,))
    add("pending", depends_on=(middle,))  # holds middle, and held through it
    corral.deregister(store, worker("idle").id)
    worker("live")
    clock.advance(10 * DAY)
    add("young")
    ages = Ages(finished_s=DAY, events_s=DAY, workers_s=DAY)

    counted = prune(store, ages, dry_run=True)
    pruned = prune(store, ages)

    expected = (pruned.tasks, pruned.events, pruned.workers)
    assert expected == (counted.tasks, counted.events, counted.workers)
    assert (3, 4) == (pruned.tasks, pruned.workers)
    assert not gone(store, held) and not gone(store, middle)


def test_a_task_whose_unlanded_work_only_a_backup_ref_holds_stays_until_asked(
    store: Store, clock: FakeClock, add: Callable[..., Any]
) -> None:
    """Retention keeps a finished task whose review names backup refs of work that never
    landed (nothing else names them); --with-unlanded-work deletes it and an event keeps
    the refs' names."""
    stranded, plain = add("stranded").id, add("plain").id
    ref = f"refs/corral/backup/corral/w/{stranded}/wip-0123456789ab"
    store.reviews.record_cleanup(
        stranded, token=None, backups=(ref,), branch_deleted=False, actor="prune"
    )
    for task in (stranded, plain):
        corral.cancel(store, task)
    clock.advance(2 * DAY)

    assert 1 == prune(store, Ages(finished_s=DAY), dry_run=True).tasks
    assert 1 == prune(store, Ages(finished_s=DAY)).tasks
    assert (False, True) == (gone(store, stranded), gone(store, plain))
    assert 1 == prune(store, Ages(finished_s=DAY), dry_run=True, unlanded=True).tasks
    assert 1 == prune(store, Ages(finished_s=DAY), unlanded=True).tasks
    assert gone(store, stranded)
    (named,) = store.events.list_events(EventFilter(names=("task.pruned_unlanded",)))
    assert (stranded, {"backup_refs": [ref]}) == (named.task_id, named.data)
