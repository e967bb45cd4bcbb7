"""Store operations of retention (corral/usecases/retention.py): what is old enough to delete, and
its deletion in bounded batches.

Each batch is one write transaction that holds the store's write lock briefly: the
candidates are read first, in read transactions that block no one (the scans are
there), and each batch's write re-checks them as its compare-and-set: a task deleted is
still finished and unchanged since before the cutoff, and no task that stays depends on
it; a worker deleted is still gone and silent. So a task retried between the read and
the write, or a worker that came back, is left alone. A task goes with its runs (and
their artifacts' rows), claims, review and dependency rows; its events stay until they
are old enough themselves.

A finished task whose work never landed and lives only in backup refs corral wrote (its
review names them: a failed or cancelled task's removed worktree, a deleted branch) is
kept: deleting it would leave refs nobody names. With `unlanded=True` it goes too, and
the batch records a `task.pruned_unlanded` event naming its refs, in the same
transaction.
"""

from __future__ import annotations

from datetime import datetime

from corral.foundation.records import record
from corral.model.states import FINAL
from corral.store import journal
from corral.store.driver import Row, Tx
from corral.store.operations import Repository

_FINAL = sorted(str(s) for s in FINAL)


@record(frozen=True, slots=True, kw_only=True)
class DeletedTasks:
    """What one batch deleted: tasks, and the runs (id, transcript, stderr) whose output
    files are now to be removed."""

    tasks: int
    runs: tuple[tuple[str, str | None, str | None], ...]


class Retention(Repository):
    """Find and delete what is old enough."""

    NAME = "retention"

    def prunable_tasks(self, cutoff: datetime, limit: int, *, unlanded: bool = False) -> list[str]:
        """Up to `limit` finished tasks last changed before `cutoff` that no kept task
        depends on (and, unless `unlanded`, whose unlanded work no backup ref holds),
        newest first."""
        with self._driver.read() as tx:
            rows = tx.all(
                "prunable_tasks", final=_FINAL, cutoff=cutoff, limit=limit, unlanded=unlanded
            )
        return [str(r["id"]) for r in rows]

    def count_prunable(self, *, tasks_before: datetime | None, events_before: datetime | None,
                       workers_before: datetime | None,
                       unlanded: bool = False) -> dict[str, int]:  # fmt: skip
        """What a dry run reports: exactly what a pass with these cutoffs (None: that kind
        stays) would delete, in one read. Its tasks are the finished ones old enough less
        those a staying task depends on at any distance; its events those before the
        pass's boundary; its gone workers those no staying task's claim or run names (a
        pass deletes tasks first, with their claims and runs, and so frees workers)."""
        counts = {"tasks": 0, "events": 0, "workers": 0}
        going = {"final": _FINAL, "tasks_cutoff": tasks_before, "unlanded": unlanded}
        with self._driver.read() as tx:
            if tasks_before is not None:
                counts["tasks"] = _count(tx.one("count_prunable_tasks", **going))
            if events_before is not None:
                boundary = _boundary(tx, events_before)
                counts["events"] = _count(tx.one("count_events_before", boundary=boundary))
            if workers_before is not None:
                found = tx.one("count_prunable_workers", cutoff=workers_before, **going)
                counts["workers"] = _count(found)
        return counts

    def delete_tasks(
        self, task_ids: list[str], cutoff: datetime, *, unlanded: bool = False
    ) -> DeletedTasks:
        """Delete those of `task_ids` still finished and unchanged since before `cutoff`
        that no task staying depends on (and, unless `unlanded`, whose unlanded work no
        backup ref holds), with their runs, claims, reviews and dependency rows, in one
        transaction."""
        with self._driver.read() as tx:
            tokens = [int(r["token"]) for r in tx.all("prunable_claims", ids=task_ids)]
        with self._driver.write() as tx:
            kept = {
                str(r["id"])
                for r in tx.all(
                    "still_prunable", ids=task_ids, final=_FINAL, cutoff=cutoff, unlanded=unlanded
                )
            }
            dependents = [
                (str(r["task_id"]), str(r["depends_on"]))
                for r in tx.all("dependents_of", ids=sorted(kept))
            ]
            going = _without_kept_dependents(kept, dependents)
            if not going:
                return DeletedTasks(tasks=0, runs=())
            ids = sorted(going)
            runs = tuple(
                (str(r["id"]), r["transcript_path"], r["stderr_path"])
                for r in tx.all("run_files_of", ids=ids)
            )
            tx.run("delete_artifacts_of", ids=ids)
            tx.run("delete_runs_of", ids=ids)
            tx.run("delete_claims_of", ids=ids, tokens=tokens)
            for row in tx.all("unlanded_backups_of", ids=ids) if unlanded else ():
                refs = list(self._driver.json(row["backup_refs"]))
                data = {"backup_refs": refs}
                journal.record(
                    tx, "task.pruned_unlanded", actor="retention", task_id=row["task_id"], data=data
                )
            tx.run("delete_reviews_of", ids=ids)
            tx.run("delete_dependencies_of", ids=ids)
            deleted = tx.run("delete_tasks", ids=ids)
        return DeletedTasks(tasks=deleted, runs=runs)

    def event_boundary(self, cutoff: datetime) -> int:
        """The id of the first event to keep: every event before it is older than `cutoff`
        (ids follow the log's order)."""
        with self._driver.read() as tx:
            return _boundary(tx, cutoff)

    def delete_events_before(self, boundary: int, limit: int) -> int:
        """Delete up to `limit` of the oldest events with an id below `boundary`."""
        with self._driver.write() as tx:
            return tx.run("delete_events_before", boundary=boundary, limit=limit)

    def prunable_workers(self, cutoff: datetime) -> list[str]:
        """Workers dead or offline, silent since before `cutoff`, that no claim or run names."""
        with self._driver.read() as tx:
            return [str(r["id"]) for r in tx.all("prunable_workers", cutoff=cutoff)]

    def delete_workers(self, worker_ids: list[str], cutoff: datetime) -> int:
        """Delete those of `worker_ids` still gone and silent since before `cutoff`."""
        with self._driver.write() as tx:
            return tx.run("delete_workers", ids=worker_ids, cutoff=cutoff)


def _boundary(tx: Tx, cutoff: datetime) -> int:
    """The id of the first event at or after `cutoff`, else one past the last."""
    first = tx.one("first_event_kept", cutoff=cutoff)
    if first is not None:
        return int(first["id"])
    last = tx.one("last_event_id")
    return (int(last["id"]) if last else 0) + 1


def _count(row: Row | None) -> int:
    return int(row["n"]) if row else 0


def _without_kept_dependents(going: set[str], dependents: list[tuple[str, str]]) -> set[str]:
    """`going` less every task a staying task depends on, until none is left out."""
    going = set(going)
    changed = True
    while changed:
        changed = False
        for dependent, dependency in dependents:
            if dependency in going and dependent not in going:
                going.discard(dependency)
                changed = True
    return going
