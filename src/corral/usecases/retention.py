"""Retention: deleting what is old enough, in bounded batches (`corral prune`, and the
maintenance pass: the leading orchestrator's every `retention.interval`, `corral reconcile`).

    finished tasks   done, failed or cancelled, unchanged for `finished_after`, that no
                     kept task depends on: with their runs, claims, review, dependency
                     rows, and the runs' output files and artifacts under this store's
                     runs folder. Not a task whose work never landed and is only in the
                     backup refs its review names (a failed task's removed worktree):
                     once it is gone nothing names those refs, so it stays until
                     `unlanded=True` (`corral prune --with-unlanded-work`), which deletes
                     it and records a `task.pruned_unlanded` event naming its refs
    events           older than `events_after`, oldest first
    gone workers     dead or offline, silent for `workers_after`, that no claim or run
                     still names (their runs go with their tasks first)

Each batch is one short write transaction (store/retention.py says how it re-checks what
it deletes), so claims wait at most one batch: BATCH_TASKS tasks, BATCH_ROWS events, or
one worker. Files are removed after the batch committed, and only inside the runs folder
(corral removes only what is its own); a file already gone is no error. Nothing younger,
unfinished or still referenced is touched.
"""

from __future__ import annotations

import os
import shutil
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from corral.model.artifacts import artifacts_dir
from corral.model.outbox import OUTBOX_SUFFIX
from corral.store import Store
from corral.store.location import is_inside, runs_dir, shipped_output

BATCH_TASKS = 50  # bench/retention_claims.py: 200 made claims wait up to 117 ms, 50 up to 53
CANDIDATES = 5000  # read at once: each read scans the finished tasks
BATCH_ROWS = 2000


@dataclass(frozen=True, slots=True, kw_only=True)
class Ages:
    """How old each kind of row must be to go, in seconds; None keeps that kind."""

    finished_s: float | None = None
    events_s: float | None = None
    workers_s: float | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Pruned:
    """What a pass deleted (or, in a dry run, would delete: runs and files not counted)."""

    tasks: int = 0
    runs: int = 0
    files: int = 0
    events: int = 0
    workers: int = 0
    dry_run: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "tasks": self.tasks,
            "runs": self.runs,
            "files": self.files,
            "events": self.events,
            "workers": self.workers,
            "dry_run": self.dry_run,
        }

    @property
    def total(self) -> int:
        """Rows deleted, or to delete."""
        return self.tasks + self.events + self.workers


def prune(
    store: Store,
    ages: Ages,
    *,
    dry_run: bool = False,
    batch: int = BATCH_TASKS,
    unlanded: bool = False,
) -> Pruned:
    """One retention pass over `store` (a local one: the runs' files are on this host);
    tasks whose unlanded work only backup refs hold go too with `unlanded`."""
    now = store.now()
    cutoffs = {k: _before(now, s) for k, s in (("t", ages.finished_s), ("e", ages.events_s),
                                              ("w", ages.workers_s))}  # fmt: skip
    if dry_run:
        counts = store.retention.count_prunable(
            tasks_before=cutoffs["t"],
            events_before=cutoffs["e"],
            workers_before=cutoffs["w"],
            unlanded=unlanded,
        )
        return Pruned(dry_run=True, **counts)
    tasks = runs = files = 0
    if cutoffs["t"] is not None:
        tasks, runs, files = _prune_tasks(store, cutoffs["t"], batch, unlanded=unlanded)
    events = _prune_events(store, cutoffs["e"]) if cutoffs["e"] is not None else 0
    workers = _prune_workers(store, cutoffs["w"]) if cutoffs["w"] is not None else 0
    return Pruned(tasks=tasks, runs=runs, files=files, events=events, workers=workers)


def _before(now: datetime, age_s: float | None) -> datetime | None:
    return None if age_s is None else now - timedelta(seconds=age_s)


def _prune_tasks(
    store: Store, cutoff: datetime, batch: int, *, unlanded: bool
) -> tuple[int, int, int]:
    """Batches of the newest prunable tasks until none is left; (tasks, runs, files)."""
    folder = runs_dir(store.url)
    # Candidates of a batch that deleted none: a task outside the batch depends on each.
    # Any deletion may free them (their dependents went), so they are tried again then.
    stuck: set[str] = set()
    tasks = runs = files = 0
    while True:
        found = store.retention.prunable_tasks(cutoff, CANDIDATES + len(stuck), unlanded=unlanded)
        found = [t for t in found if t not in stuck]
        if not found:
            return tasks, runs, files
        for start in range(0, len(found), batch):
            chunk = found[start : start + batch]
            deleted = store.retention.delete_tasks(chunk, cutoff, unlanded=unlanded)
            if deleted.tasks:
                stuck.clear()
            else:
                stuck.update(chunk)
            tasks, runs = tasks + deleted.tasks, runs + len(deleted.runs)
            files += sum(_remove_outputs(store.url, folder, run) for run in deleted.runs)


def _remove_outputs(db: str, folder: str, run: tuple[str, str | None, str | None]) -> int:
    """Remove a deleted run's output files found inside `folder`; how many were there."""
    run_id, transcript, stderr = run
    paths = [p for p in (transcript, stderr) if p]
    if transcript:
        stem = os.path.splitext(transcript)[0]
        paths += [f"{stem}.verify.out", f"{stem}.verify.err", f"{stem}{OUTBOX_SUFFIX}"]
    paths += [shipped_output(db, run_id, stream) for stream in ("transcript", "stderr")]
    removed = 0
    for path in paths:
        if is_inside(path, folder):
            with suppress(FileNotFoundError):
                os.unlink(path)
                removed += 1
    if transcript:
        removed += _remove_artifacts(artifacts_dir(transcript) or "", folder)
    return removed


def _remove_artifacts(kept: str, folder: str) -> int:
    """Remove a deleted run's artifacts folder (corral.model.artifacts), if it is a real
    folder inside `folder`; how many files it held."""
    if os.path.islink(kept) or not os.path.isdir(kept) or not is_inside(kept, folder):
        return 0
    files = sum(len(names) for _, _, names in os.walk(kept))
    shutil.rmtree(kept, ignore_errors=True)
    return files


def _prune_events(store: Store, cutoff: datetime) -> int:
    boundary = store.retention.event_boundary(cutoff)
    deleted = 0
    while count := store.retention.delete_events_before(boundary, BATCH_ROWS):
        deleted += count
    return deleted


def _prune_workers(store: Store, cutoff: datetime) -> int:
    """One worker a transaction: the database checks, for each, that no claim or run names
    it, and no index serves those checks (one would cost every claim its upkeep)."""
    return sum(
        store.retention.delete_workers([w], cutoff)
        for w in store.retention.prunable_workers(cutoff)
    )
