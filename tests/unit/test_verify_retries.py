"""Verify retries read from a task's runs: how many in a row were spent, and the failure
its next run is told (corral.model.verify_retries)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from corral import Run, RunOutcome
from corral.model import verify_retries
from corral.model.events import Event

FAILED_CHECK = "verify failed: `./check.sh` exited with status 1\nFAILED: good.txt is missing"
RETRIED = (RunOutcome.DEFERRED, FAILED_CHECK)
LOST = (RunOutcome.LEASE_LOST, None)
OPEN = (None, None)


def runs(*ends: tuple[RunOutcome | None, str | None]) -> list[Run]:
    """Runs of one task, newest first, each ended with (outcome, error)."""
    return [
        Run(
            id=f"r-{n}",
            task_id="t-1",
            worker_id="w-1",
            token=n,
            attempt=1,
            prompt=None,
            command=(),
            cwd="/work",
            transcript_path=None,
            stderr_path=None,
            base_commit=None,
            final_commit=None,
            started_at=datetime(2030, 1, 1, tzinfo=UTC),
            finished_at=None,
            exit_code=None,
            outcome=outcome,
            error=error,
            usage=None,
            stalled_at=None,
            last_progress_at=None,
            progress=None,
        )
        for n, (outcome, error) in enumerate(ends)
    ]


@pytest.mark.parametrize(
    ("ends", "expected"),
    [
        ((), 0),
        ((OPEN,), 0),
        ((OPEN, RETRIED), 1),
        ((OPEN, RETRIED, RETRIED), 2),
        # a lost claim, a shutdown or a kill between retries neither counts nor ends the row
        ((OPEN, RETRIED, LOST, (RunOutcome.SHUTDOWN, None), RETRIED), 2),
        ((OPEN, RETRIED, (RunOutcome.KILLED, None), RETRIED), 2),
        # a person's answer (the run that waited) or a spent attempt starts a new row
        ((OPEN, RETRIED, (RunOutcome.WAITING, FAILED_CHECK), RETRIED, RETRIED), 1),
        ((OPEN, RETRIED, (RunOutcome.FAILED, "exit status 1"), RETRIED), 1),
        # a deferral for another reason (a usage limit, `corral defer`) is no verify retry
        ((OPEN, (RunOutcome.DEFERRED, "usage limit"), RETRIED), 0),
    ],
)
def test_spent_counts_the_verify_retries_in_a_row(
    ends: tuple[tuple[RunOutcome | None, str | None], ...], expected: int
) -> None:
    """Newest first, the deferred runs whose error is a verify failure, to the first run
    that ended otherwise; interruptions and the open run passed over."""
    assert expected == verify_retries.spent(runs(*ends))


@pytest.mark.parametrize(
    ("ends", "expected"),
    [
        ((), None),
        ((OPEN,), None),
        ((OPEN, LOST, RETRIED), FAILED_CHECK),
        ((OPEN, (RunOutcome.WAITING, FAILED_CHECK)), FAILED_CHECK),
        ((OPEN, (RunOutcome.WAITING, "refused: Write"), RETRIED), None),
        ((OPEN, (RunOutcome.DONE, None), RETRIED), None),
    ],
)
def test_last_failure_is_the_verify_failure_of_the_last_run_that_ended_on_its_work(
    ends: tuple[tuple[RunOutcome | None, str | None], ...], expected: str | None
) -> None:
    """The next run is told the verify failure of the last run that said anything of its
    work (after a person's answer too), and nothing once a run got past it."""
    assert expected == verify_retries.last_failure(runs(*ends))


def events(*named: tuple[str, list[str] | None]) -> list[Event]:
    """A task's checks events, newest first, each (name, the checks its data names)."""
    return [
        Event(
            id=100 - n,
            at=datetime(2030, 1, 1, tzinfo=UTC),
            name=name,
            task_id="t-1",
            worker_id=None,
            token=None,
            from_status=None,
            to_status=None,
            actor="reconciler",
            reason=None,
            data=None if checks is None else {"checks": checks},
        )
        for n, (name, checks) in enumerate(named)
    ]


@pytest.mark.parametrize(
    ("named", "spent", "sent"),
    [
        ((), 0, frozenset()),
        ((("task.checks_failed", ["b"]), ("task.checks_failed", ["a"])), 2, {"b"}),
        # A person's answer ends the row; the failure waited on is still the last acted on.
        (
            (("task.answered", None), ("task.waiting", ["c"]), ("task.checks_failed", ["b"])),
            0,
            {"c"},
        ),
        (
            (
                ("task.checks_failed", ["d"]),
                ("task.changes_requested", None),
                ("task.checks_failed", ["a"]),
            ),
            1,
            {"d"},
        ),
    ],
)
def test_checks_retries_in_a_row_and_the_failure_last_acted_on(
    named: tuple[tuple[str, list[str] | None], ...], spent: int, sent: frozenset[str]
) -> None:
    """Counted newest first up to a person's act or a wait; the last checks acted on are
    the newest event's that names some."""
    found = events(*named)
    assert (spent, sent) == (verify_retries.checks_spent(found), verify_retries.checks_sent(found))
