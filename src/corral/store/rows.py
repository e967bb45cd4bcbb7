"""Rows to records: the one place that knows the column names of the views.

Each builder imports its record's module when first called: a command that reads no
task never builds the task record classes (bench/cli_latency.py).

Each function takes the driver for decoding, because SQLite keeps instants as epoch
seconds and JSON as text while PostgreSQL hands back datetimes and decoded JSON.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from corral.model.states import ClaimStatus, TaskStatus, WorkerStatus
from corral.store.driver import Driver, Row

if TYPE_CHECKING:
    from corral.model.claims import Claim, RunningTask
    from corral.model.events import Event
    from corral.model.messages import Message
    from corral.model.reviews import Review
    from corral.model.runs import Run
    from corral.model.tasks import Task
    from corral.model.workers import Worker


class Decoder(Protocol):
    """What building a record reads of a driver: how it decodes instants and JSON (a
    `Driver`, or the exchange's decoding of one batch, store/exchange.py)."""

    def instant(self, value: Any) -> datetime: ...
    def json(self, value: Any) -> Any: ...


def _maybe_instant(driver: Decoder, value: Any) -> datetime | None:
    return None if value is None else driver.instant(value)


def _maybe_json(driver: Decoder, value: Any) -> Any:
    return None if value is None else driver.json(value)


# Status values to their enum members by a dict lookup: a few times cheaper than calling
# the enum, once per record (bench/runner_throughput.py builds 20,000).
_TASK_STATUS = {str(s): s for s in TaskStatus}


def task(
    driver: Decoder,
    row: Row,
    *,
    claim: tuple[int, str, Any] | None = None,
    depends_on: Any = None,
) -> Task:
    """A `task_view` row; or a `tasks` row with its active `claim` (token, worker id, lease
    expiry) and `depends_on` given apart (a claim just made, whose view is not read)."""
    from corral.model.tasks import Task

    token, worker_id, lease = (
        (row["token"], row["worker_id"], row["lease_expires_at"]) if claim is None else claim
    )
    deps = driver.json(row["depends_on"] if depends_on is None else depends_on)
    return Task(
        id=row["id"],
        title=row["title"],
        description=row["description"],
        queue=row["queue"],
        kind=row["kind"],
        priority=row["priority"],
        status=_TASK_STATUS[row["status"]],
        payload=driver.json(row["payload"]),
        labels=driver.json(row["labels"]),
        depends_on=tuple(deps or ()),
        assignee=row["assignee"],
        parent_id=row["parent_id"],
        attempts=row["attempts"],
        max_attempts=row["max_attempts"],
        crashes=row["crashes"],
        retry_base_s=row["retry_base_s"],
        timeout_s=row["timeout_s"],
        run_after=driver.instant(row["run_after"]),
        requires_review=bool(row["requires_review"]),
        branch=row["branch"],
        result=_maybe_json(driver, row["result"]),
        last_error=row["last_error"],
        failure_reason=row["failure_reason"],
        worker_id=worker_id,
        token=token,
        lease_expires_at=_maybe_instant(driver, lease),
        created_at=driver.instant(row["created_at"]),
        updated_at=driver.instant(row["updated_at"]),
        finished_at=_maybe_instant(driver, row["finished_at"]),
        seq=_seq(row),
        wait_reason=row["wait_reason"],
        answer=row["answer"],
        answered_reason=row["answered_reason"],
        site=row["site"],
    )


def _seq(row: Row) -> int:
    """The row's `seq` where its query read one (the listings that page by it), else 0."""
    try:
        return int(row["seq"])
    except (KeyError, IndexError):  # psycopg's rows, sqlite3.Row
        return 0


def claim(driver: Driver, row: Row) -> Claim:
    """A `claims` row."""
    from corral.model.claims import Claim

    return Claim(
        token=row["token"],
        task_id=row["task_id"],
        worker_id=row["worker_id"],
        status=ClaimStatus(row["status"]),
        lease_s=row["lease_s"],
        claimed_at=driver.instant(row["claimed_at"]),
        lease_expires_at=driver.instant(row["lease_expires_at"]),
        deadline_at=_maybe_instant(driver, row["deadline_at"]),
        renewals=row["renewals"],
    )


def running_task(driver: Driver, row: Row) -> RunningTask:
    """A `running_tasks` row: an active claim, its task's title and its unfinished run."""
    from corral.model.claims import RunningTask

    return RunningTask(
        token=row["token"],
        task_id=row["task_id"],
        title=row["title"],
        queue=row["queue"],
        worker_id=row["worker_id"],
        claimed_at=driver.instant(row["claimed_at"]),
        run_id=row["run_id"],
        transcript_path=row["transcript_path"],
        stderr_path=row["stderr_path"],
    )


def worker(driver: Driver, row: Row) -> Worker:
    """A `worker_view` row."""
    from corral.model.workers import Worker

    return Worker(
        id=row["id"],
        name=row["name"],
        hostname=row["hostname"],
        pid=row["pid"],
        version=row["version"],
        queues=tuple(driver.json(row["queues"])),
        kinds=tuple(driver.json(row["kinds"])),
        max_concurrent=row["max_concurrent"],
        labels=driver.json(row["labels"]),
        status=WorkerStatus(row["status"]),
        registered_at=driver.instant(row["registered_at"]),
        last_heartbeat_at=driver.instant(row["last_heartbeat_at"]),
        active=row["active"],
        completed_total=row["completed_total"],
        failed_total=row["failed_total"],
        offline_reason=row["offline_reason"],
        cpu_percent=row["cpu_percent"],
        rss_bytes=row["rss_bytes"],
        pid_started_at=row["pid_started_at"],
        provider=row["provider"],
        agent_cpu_percent=row["agent_cpu_percent"],
        agent_rss_bytes=row["agent_rss_bytes"],
        reported_active=row["reported_active"],
        completed_delta=row["completed_delta"],
        failed_delta=row["failed_delta"],
        reported_completed_total=int(row["reported_completed_total"]),
        reported_failed_total=int(row["reported_failed_total"]),
        seq=_seq(row),
        namespace=row["namespace"],
        site=row["site"],
        key_hash=row["key_hash"],
        runs_key_hash=row["runs_key_hash"],
        deregistered_at=_maybe_instant(driver, row["deregistered_at"]),
    )


def event(driver: Driver, row: Row) -> Event:
    """An `events` row."""
    from corral.model.events import Event  # only event listings need it: off the CLI's common path

    return Event(
        id=row["id"],
        at=driver.instant(row["at"]),
        name=row["name"],
        task_id=row["task_id"],
        worker_id=row["worker_id"],
        token=row["token"],
        from_status=row["from_status"],
        to_status=row["to_status"],
        actor=row["actor"],
        reason=row["reason"],
        data=_maybe_json(driver, row["data"]),
    )


def run(driver: Driver, row: Row) -> Run:
    """A `runs` row."""
    from corral.model.runs import (  # only run commands need it: off the CLI's common path
        Run,
        RunOutcome,
    )

    return Run(
        id=row["id"],
        task_id=row["task_id"],
        worker_id=row["worker_id"],
        token=row["token"],
        attempt=row["attempt"],
        prompt=row["prompt"],
        command=tuple(driver.json(row["command"])),
        cwd=row["cwd"],
        transcript_path=row["transcript_path"],
        stderr_path=row["stderr_path"],
        base_commit=row["base_commit"],
        final_commit=row["final_commit"],
        started_at=driver.instant(row["started_at"]),
        finished_at=_maybe_instant(driver, row["finished_at"]),
        exit_code=row["exit_code"],
        outcome=None if row["outcome"] is None else RunOutcome(row["outcome"]),
        error=row["error"],
        usage=_maybe_json(driver, row["usage"]),
        stalled_at=_maybe_instant(driver, row["stalled_at"]),
        last_progress_at=_maybe_instant(driver, row["last_progress_at"]),
        progress=row["progress"],
        agent=row["agent"],
        session_id=row["session_id"],
        resumed_from=row["resumed_from"],
        stop_reason=row["stop_reason"],
        # The flag is why it waits while it runs: a finished run asks nobody anything, so
        # its question is not shown once it ended, whichever road ended it.
        waiting=row["waiting"] if row["finished_at"] is None else None,
        seq=_seq(row),
    )


def review(driver: Driver, row: Row) -> Review:
    """A `reviews` row."""
    files, backups, outcome = row["conflict_files"], row["backup_refs"], row["outcome"]
    disabled = row["tests_disabled"]
    from corral.model.reviews import Review, WorkOutcome

    return Review(
        task_id=row["task_id"],
        base_ref=row["base_ref"],
        worktree_path=row["worktree_path"],
        note=row["note"],
        pr_url=row["pr_url"],
        pr_state=row["pr_state"],
        approved_commit=row["approved_commit"],
        approve_note=row["approve_note"],
        changes_note=row["changes_note"],
        conflict_files=None if files is None else tuple(driver.json(files)),
        merged_commit=row["merged_commit"],
        outcome=None if outcome is None else WorkOutcome(outcome),
        backup_refs=() if backups is None else tuple(driver.json(backups)),
        branch_deleted=bool(row["branch_deleted"]),
        tests_disabled=() if disabled is None else tuple(driver.json(disabled)),
    )


def message(driver: Driver, row: Row) -> Message:
    """A `list_messages` row: a message with its acknowledgement, if any."""
    from corral.model.messages import Message

    return Message(
        id=row["id"],
        at=driver.instant(row["at"]),
        sender=row["sender"],
        recipient=row["recipient"],
        type=row["type"],
        body=_maybe_json(driver, row["body"]),
        acked_at=_maybe_instant(driver, row["acked_at"]),
        acked_by=row["acked_by"],
    )
