"""What running one task produced, before it is reported to the store.

Every job's runs (jobs.py: commands, commands in worktrees, Python callables) end in a
`Done`; the lane turns it into one report (`report_of`): complete, fail, defer or release.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from corral.foundation import documents
from corral.model.exchange import Action, Held, Report
from corral.model.runs import RunOutcome

DEFER_EXIT_CODE = 75  # EX_TEMPFAIL: "try again later", as sendmail and friends use it


class Ending(StrEnum):
    """How the work stopped."""

    EXITED = "exited"  # the command exited, or the function returned
    RAISED = "raised"  # the function raised
    TIMEOUT = "timeout"
    STALLED = "stalled"
    STOPPED = "stopped"  # the runner stopped it: shutdown, or the claim was lost


@dataclass(frozen=True, slots=True, kw_only=True)
class Done:
    """The result of one run, as the runner reports it."""

    ending: Ending
    success: bool
    exit_code: int | None = None
    error: str | None = None
    result: Any = None
    usage: dict[str, Any] | None = None
    stop_reason: str | None = None
    defer_s: float | None = None
    final_commit: str | None = None  # the commit a task's worktree ended at
    defer_until: datetime | None = None  # deferred until then (an agent's usage limit) ...
    defer_reason: str | None = None  # ... for this reason
    wait_reason: str | None = None  # a person must act (model/waiting.py): the task waits
    session_id: str | None = None  # an agent's: the session its stream named (its span's)
    model: str | None = None  # an agent's: the model it ran, as asked or as its stream said


_FAILED = {Ending.TIMEOUT: RunOutcome.TIMEOUT, Ending.STALLED: RunOutcome.STALLED}


def report_of(held: Held, done: Done) -> Report:
    """What `done` does to the task `held`: wait, complete, defer, release (stopped) or
    fail."""
    done = storable(done)
    common: dict[str, Any] = {
        "exit_code": done.exit_code,
        "usage": done.usage,
        "final_commit": done.final_commit,
    }
    if done.wait_reason is not None:
        return Report.of(
            held,
            Action.WAIT,
            RunOutcome.WAITING,
            reason=done.wait_reason,
            error=done.error,
            **common,
        )
    if done.success:
        return Report.of(held, Action.COMPLETE, RunOutcome.DONE, result=done.result, **common)
    if done.defer_until is not None or done.defer_s is not None:
        # Until an instant (an agent's usage limit: its reset), or for a delay (exit 75).
        return Report.of(
            held,
            Action.DEFER,
            RunOutcome.DEFERRED,
            run_at=done.defer_until,
            delay_s=None if done.defer_until is not None else done.defer_s,
            reason=done.defer_reason or f"exit status {DEFER_EXIT_CODE}",
            error=done.error,
            **common,
        )
    if done.ending is Ending.STOPPED:
        lost = done.stop_reason == "lease_lost"
        outcome = RunOutcome.LEASE_LOST if lost else RunOutcome.SHUTDOWN
        return Report.of(
            held,
            Action.RELEASE,
            outcome,
            error=done.error,
            reason="worker shutting down",
            **common,
        )
    error = done.error or "failed"
    return Report.of(held, Action.FAIL, _failure_outcome(done), error=error, **common)


def storable(done: Done) -> Done:
    """`done` as every store holds it (corral.foundation.documents): NUL in the error
    replaced, a usage that is not such a document dropped, and a success whose result is
    not one a failure that says why (else PostgreSQL would refuse the report, and the task
    run again)."""
    error = None if done.error is None else documents.without_nul(done.error)
    usage = None if documents.problem_of(done.usage) else done.usage
    problem = documents.problem_of(done.result) if done.success else None
    if problem:
        expected = "a result every store holds alike"
        return replace(done, success=False, error=f"result: expected {expected}, got {problem}")
    if error == done.error and usage is done.usage:
        return done
    return replace(done, error=error, usage=usage)


def _failure_outcome(done: Done) -> RunOutcome:
    """timeout and stalled as such; killed when a signal from outside ended the command."""
    if done.ending is Ending.EXITED and done.exit_code is not None and done.exit_code < 0:
        return RunOutcome.KILLED
    return _FAILED.get(done.ending, RunOutcome.FAILED)
