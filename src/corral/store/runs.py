"""Store operations on runs: start, finish, flag a stall, record progress, read.

A run starts under its task's active claim: the token and the worker are checked as for
any fenced operation, so a worker that lost its lease cannot start one. Finishing needs
no live claim (a run whose lease was lost is still recorded) and is a compare-and-set on
`finished_at IS NULL`: a run finishes once, and the database refuses any later change.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from corral.foundation import errors
from corral.foundation.documents import MAX_INT64
from corral.foundation.durations import iso
from corral.foundation.ids import RUN_PREFIX, new_id
from corral.store import journal, rows
from corral.store.driver import Driver, Json, Tx
from corral.store.lookups import held_claim
from corral.store.operations import OPERATOR, VIEWER, WORKER, Repository, served

if TYPE_CHECKING:
    from datetime import datetime

    from corral.model.exchange import RunStart
    from corral.model.runs import NewRun, Run, RunOutcome
    from corral.model.usage import UsageTotal


class Runs(Repository):
    """The record of every attempt at a task."""

    NAME = "runs"

    @served(OPERATOR)
    def start_run(self, spec: NewRun, *, run_id: str | None = None) -> Run:
        """Record that `spec.worker_id` starts running the task under claim `spec.token`.

        `run_id` lets a runner name the run's files and environment before it starts;
        without one a fresh id (`r-...`) is drawn.
        """
        if run_id is not None and not run_id.startswith(RUN_PREFIX):
            raise errors.InvalidInput("run_id", f"an id starting with {RUN_PREFIX!r}", run_id)
        with self._driver.write() as tx:
            held_claim(
                tx,
                self._driver,
                spec.task_id,
                action="run",
                token=spec.token,
                worker_id=spec.worker_id,
            )
            row = tx.one(
                "start_run",
                id=run_id or new_id(RUN_PREFIX),
                task_id=spec.task_id,
                worker_id=spec.worker_id,
                token=spec.token,
                attempt=spec.attempt,
                prompt=spec.prompt,
                command=Json(list(spec.command)),
                cwd=spec.cwd,
                base_commit=spec.base_commit,
                transcript_path=spec.transcript_path,
                stderr_path=spec.stderr_path,
            )
            assert row is not None  # an INSERT ... RETURNING always returns its row
            run = rows.run(self._driver, row)
            journal.record(
                tx,
                "run.started",
                actor=run.worker_id,
                task_id=run.task_id,
                worker_id=run.worker_id,
                token=run.token,
                data={"run_id": run.id, "attempt": run.attempt},
            )
        return run

    @served(OPERATOR)
    def finish_run(
        self,
        run_id: str,
        *,
        outcome: RunOutcome,
        exit_code: int | None = None,
        error: str | None = None,
        usage: dict[str, Any] | None = None,
        final_commit: str | None = None,
    ) -> Run:
        """End the run with `outcome`; a run already finished is refused and left as it was."""
        ended = _outcome(outcome)
        with self._driver.write() as tx:
            row = tx.one(
                "finish_run",
                run_id=run_id,
                outcome=ended,
                exit_code=exit_code,
                error=error,
                usage=Json(usage),
                final_commit=final_commit,
            )
            if row is None:
                before = _run_in(tx, self._driver, run_id)
                raise errors.Refused(f"run {run_id} is already finished ({before.outcome})")
            run = rows.run(self._driver, row)
            journal.record(
                tx,
                "run.finished",
                actor=run.worker_id,
                task_id=run.task_id,
                worker_id=run.worker_id,
                token=run.token,
                reason=error,
                data={"run_id": run.id, "outcome": str(ended), "exit_code": exit_code},
            )
        return run

    @served(WORKER, owns="run_id", frees_work=False)
    def set_run_start(self, run_id: str, start: RunStart) -> None:
        """Record how an unfinished run really runs, when that is known only after its claim
        (a worktree made outside the claim's transaction), and a worktree's site as its
        task's (where the task is claimed while a worker there can run it)."""
        with self._driver.write() as tx:
            tx.run(
                "set_run_start",
                run_id=run_id,
                command=Json(list(start.command)),
                cwd=start.cwd,
                prompt=start.prompt,
                transcript_path=start.transcript_path,
                stderr_path=start.stderr_path,
                base_commit=start.base_commit,
            )
            if start.site is not None:
                tx.run("keep_task_at_site", run_id=run_id, site=start.site)

    @served(WORKER, owns="run_id", frees_work=False)
    def set_run_paths(
        self, run_id: str, *, transcript_path: str | None, stderr_path: str | None
    ) -> None:
        """Record where an unfinished run's output goes (paths made absolute)."""

        with self._driver.write() as tx:
            tx.run(
                "set_run_paths",
                run_id=run_id,
                transcript_path=None
                if transcript_path is None
                else os.path.abspath(transcript_path),
                stderr_path=None if stderr_path is None else os.path.abspath(stderr_path),
            )

    @served(WORKER, owns="run_id", frees_work=False)
    def mark_waiting(self, run_id: str, reason: str) -> None:
        """Flag an unfinished run as waiting for a person (event `run.waiting`): silent for
        its stall timeout, or its agent asked a question; else change nothing.

        A run already flagged stays flagged without a second event until
        `record_progress` clears the flag.
        """
        with self._driver.write() as tx:
            row = tx.one("mark_waiting", run_id=run_id, reason=reason)
            if row is None:
                _run_in(tx, self._driver, run_id)  # NotFound; finished or flagged: nothing to do
                return
            last = row["last_progress_at"]
            journal.record(
                tx,
                "run.waiting",
                actor=row["worker_id"],
                task_id=row["task_id"],
                worker_id=row["worker_id"],
                token=row["token"],
                reason=reason,
                data={
                    "run_id": run_id,
                    "last_progress_at": None if last is None else iso(self._driver.instant(last)),
                },
            )

    @served(WORKER, owns="run_id", frees_work=False)
    def record_agent_run(
        self,
        run_id: str,
        *,
        agent: str | None = None,
        session_id: str | None = None,
        resumed_from: str | None = None,
        stop_reason: str | None = None,
    ) -> None:
        """Note what an agent's unfinished run says of itself (None keeps a field); a
        finished run is left as it was."""
        with self._driver.write() as tx:
            tx.run(
                "record_agent_run",
                run_id=run_id,
                agent=agent,
                session_id=session_id,
                resumed_from=resumed_from,
                stop_reason=stop_reason,
            )

    @served(VIEWER)
    def waiting_runs(self) -> list[dict[str, Any]]:
        """The unfinished runs waiting for a person: run_id, task_id, worker_id, reason and
        since (ISO), oldest first."""
        with self._driver.read() as tx:
            found = tx.all("waiting_runs")
        return [
            {
                "run_id": row["id"],
                "task_id": row["task_id"],
                "worker_id": row["worker_id"],
                "reason": row["waiting"],
                "since": iso(self._driver.instant(row["stalled_at"])),
            }
            for row in found
        ]

    @served(VIEWER)
    def last_session(self, task_id: str) -> tuple[str, str, str | None, str] | None:
        """(run id, session id, agent, cwd) of the task's newest run that recorded an
        agent session, or None: what a new run of it may resume."""
        with self._driver.read() as tx:
            row = tx.one("last_session", task_id=task_id)
        if row is None:
            return None
        return row["id"], row["session_id"], row["agent"], row["cwd"]

    @served(VIEWER)
    def usage_by(
        self,
        by: str,
        *,
        since: datetime | None = None,
        task_id: str | None = None,
        limit: int = 1000,
    ) -> list[UsageTotal]:
        """The runs started since `since` (of task `task_id`), summed by `by` (one of
        model.usage.GROUPINGS), the costliest first."""
        from corral.model.usage import GROUPINGS, UsageTotal

        if by not in GROUPINGS:
            raise errors.InvalidInput("by", "one of " + ", ".join(GROUPINGS), by)
        with self._driver.read() as tx:
            found = tx.all("usage_by", by=by, since=since, task_id=task_id, limit=limit)
        return [
            UsageTotal(
                key=row["key"],
                runs=row["runs"],
                with_usage=row["with_usage"],
                tasks=row["tasks"],
                input_tokens=_whole(row["input_tokens"]),
                output_tokens=_whole(row["output_tokens"]),
                cache_read_tokens=_whole(row["cache_read_tokens"]),
                cache_write_tokens=_whole(row["cache_write_tokens"]),
                cost_usd=row["cost_usd"],
                wall_s=row["wall_s"],
            )
            for row in found
        ]

    @served(WORKER, owns="run_id", frees_work=False)
    def launch_run(self, run_id: str) -> bool:
        """Whether run `run_id` may start its command now: its claim is still active (the
        start is then recorded as the run's first sign of life). False: the claim ended
        (the worker was declared dead, the task cancelled): nothing may start for it."""
        with self._driver.write() as tx:
            return bool(tx.run("launch_run", run_id=run_id))

    @served(WORKER, owns="run_id", frees_work=False)
    def record_usage(self, run_id: str, usage: dict[str, Any]) -> bool:
        """Keep the usage run `run_id`'s agent has streamed so far, while its claim is
        active (False: the run finished or its claim ended, and nothing was written)."""
        with self._driver.write() as tx:
            return bool(tx.run("record_usage", run_id=run_id, usage=Json(usage)))

    @served(WORKER, owns="run_id", frees_work=False)
    def record_progress(self, run_id: str, note: str | None = None) -> None:
        """The run shows signs of life now: clear any stall flag and keep `note` if given.

        A finished run is left as it was, so a progress report racing the end is harmless.
        """
        with self._driver.write() as tx:
            if not tx.run("record_progress", run_id=run_id, progress=note):
                _run_in(tx, self._driver, run_id)  # NotFound; a finished run keeps its record

    @served(VIEWER)
    def get_run(self, run_id: str) -> Run:
        """Run `run_id`, or NotFound."""
        with self._driver.read() as tx:
            return _run_in(tx, self._driver, run_id)

    @served(VIEWER)
    def list_runs(
        self,
        *,
        task_id: str | None = None,
        worker_id: str | None = None,
        limit: int = 50,
        before_seq: int | None = None,
    ) -> list[Run]:
        """The newest `limit` runs, newest first, of one task or worker or of all; with
        `before_seq` (the page before's last run), only those opened before it."""
        with self._driver.read() as tx:
            found = tx.all(
                "list_runs",
                task_id=task_id,
                worker_id=worker_id,
                limit=limit,
                before_seq=MAX_INT64 if before_seq is None else before_seq,
            )
            return [rows.run(self._driver, r) for r in found]

    @served(VIEWER)
    def count_runs(self, *, task_id: str | None = None, worker_id: str | None = None) -> int:
        """How many runs list_runs would list, were there no limit."""
        with self._driver.read() as tx:
            row = tx.one("count_runs", task_id=task_id, worker_id=worker_id)
            return int(row["n"]) if row else 0

    @served(VIEWER)
    def unfinished_runs(self, worker_id: str) -> list[Run]:
        """The worker's runs that have not finished, oldest first (a restart's leftovers)."""
        with self._driver.read() as tx:
            found = tx.all("unfinished_runs", worker_id=worker_id)
            return [rows.run(self._driver, r) for r in found]


def _whole(value: Any) -> int | None:
    """A token sum as a whole number (SQLite sums JSON numbers as floats when any is one)."""
    return None if value is None else int(value)


def _run_in(tx: Tx, driver: Driver, run_id: str) -> Run:
    """Run `run_id`, or NotFound."""
    row = tx.one("get_run", run_id=run_id)
    if row is None:
        raise errors.NotFound("run", run_id)
    return rows.run(driver, row)


def _outcome(value: str) -> RunOutcome:
    from corral.model.runs import RunOutcome

    try:
        return RunOutcome(value)
    except ValueError:
        expected = "one of " + ", ".join(RunOutcome)
        raise errors.InvalidInput("outcome", expected, value) from None
