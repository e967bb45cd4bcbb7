"""Verify retries (`[worktree] verify_retries`): a failed verify step goes back to the agent.

When a task's work fails its verify step, the task is not failed: it runs again at once in
the same worktree, resuming the same agent session, told the failing command, its exit
status and the tail of its output. Such a run gives its attempt back (it ends `deferred`,
as `corral defer` does), so verify retries never spend `max_attempts`; after
`verify_retries` of them in a row the task waits for a person (`verify: ...`) instead.

The count is not a counter of its own: it is read from the task's runs, each of which the
exchange finished in the same transaction, under the same compare-and-set on its claim,
that took the task back to ready. So a kill -9 anywhere neither loses a retry nor counts
one twice: a run whose report never committed is no verify retry, and its claim ends as
any lost claim does. Counted newest first, the retries in a row stop at the first run that
ended otherwise (done, failed, waiting for a person ...): a person's answer, or a failure
that spent an attempt, gives the agent its verify retries again. Runs cut short from
outside, which say nothing of the work (a lost claim, a worker shutting down, its process
killed: kill -9 of the runner ends its run `killed`), and the run still open are passed
over, so a retry before such a run still counts, once.

With `[worktree] land = pr` the pull request's checks are a verify step too, run by the
forge after the run ended (git/pr_checks.py): the reconcile pass that sees them fail sends
the task back to ready on its branch (event `task.checks_failed`, the failure as the
next run's changes note), up to `verify_retries` in a row, then it waits for a person
(`verify: pull request checks failed ...`). Those retries are counted from the task's
events, newest first, stopping at a person's act (changes requested, an answer, a retry)
or at the wait that ended a row, so an answer gives the agent its retries again; and a
failure already sent back (the same checks, by name, link and start: a push whose own
checks have not started yet) is not sent again.
"""

from __future__ import annotations

from collections.abc import Iterable

from corral.model.events import Event
from corral.model.runs import Run, RunOutcome

PREFIX = "verify failed"  # how a run's error says the verify step failed it
# Runs that say nothing of the work: they neither count nor end the retries in a row.
_PASSED_OVER = (None, RunOutcome.LEASE_LOST, RunOutcome.SHUTDOWN, RunOutcome.KILLED)


def is_verify_failure(error: str | None) -> bool:
    """Whether a run's error is its verify step's failure."""
    return error is not None and error.startswith(PREFIX)


def spent(runs: Iterable[Run]) -> int:
    """How many verify retries in a row the task's runs (newest first) have used."""
    count = 0
    for run in runs:
        if run.outcome in _PASSED_OVER:
            continue
        if run.outcome is not RunOutcome.DEFERRED or not is_verify_failure(run.error):
            break
        count += 1
    return count


def last_failure(runs: Iterable[Run]) -> str | None:
    """The verify failure (command, status, output's tail) of the task's last run that
    said anything of its work (newest first), or None when that run passed its step."""
    for run in runs:
        if run.outcome in _PASSED_OVER:
            continue
        return run.error if is_verify_failure(run.error) else None
    return None


CHECKS_PREFIX = "pull request checks failed"  # how a checks failure's note starts
CHECKS_FAILED = "task.checks_failed"
# The events that end a row of checks retries: a person's act, or the wait that ended one.
CHECKS_ROW_ENDS = ("task.changes_requested", "task.answered", "task.retried", "task.waiting")
CHECKS_EVENTS = (CHECKS_FAILED, *CHECKS_ROW_ENDS)


def checks_spent(events: Iterable[Event]) -> int:
    """How many checks retries in a row the task's CHECKS_EVENTS (newest first) show."""
    count = 0
    for ev in events:
        if ev.name != CHECKS_FAILED:
            break
        count += 1
    return count


def checks_sent(events: Iterable[Event]) -> frozenset[str]:
    """The checks (their keys) of the last failure acted on (sent back, or waited on), from
    the task's CHECKS_EVENTS newest first."""
    for ev in events:
        if "checks" in (ev.data or {}):
            return frozenset(str(k) for k in (ev.data or {})["checks"])
    return frozenset()
