"""Claiming and reporting tasks in batches: what a runner and the store exchange.

One write transaction carries both ways (`Store.exchange`): the outcomes of the tasks a
runner finished (`Report`), then, if it asks, up to k more tasks claimed for it (`Held`).
Each held task has its own claim, fencing token, lease and run record, opened by the
claim; the heartbeat extends all of a worker's leases together. A report applies only
under a claim that is still active: a token ended elsewhere (`corral done` by the
agent, the reconciler, a cancel) is reported back as stale and nothing of that task
changes.

k adapts (`next_batch_size`): it doubles while the queue fills the whole batch and the
tasks are quick enough that a batch fits in `window_s`; it drops to what the queue gave
(1 when the queue is shallow) and shrinks when tasks are slow, so a lone task is picked
up at once and a slow queue is not hoarded by one worker.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from corral.model.runs import RunOutcome
from corral.model.tasks import Task

if TYPE_CHECKING:
    from corral.model.backoff import Outcome


class Action(StrEnum):
    """What a report does to its task (its run is finished in every case)."""

    COMPLETE = "complete"  # done, or in_review
    FAIL = "fail"  # ready after a backoff, or failed (the retry policy decides)
    DEFER = "defer"  # ready after a delay, the attempt not counted
    RELEASE = "release"  # ready now, the attempt not counted (the worker is stopping)


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStart:
    """What the run record of a newly claimed task says about how it runs."""

    command: tuple[str, ...]
    cwd: str
    prompt: str | None = None
    transcript_path: str | None = None
    stderr_path: str | None = None
    base_commit: str | None = None  # the commit a task's worktree starts from


@dataclass(frozen=True, slots=True, kw_only=True)
class Held:
    """A task claimed for this runner, with its claim's token and its open run."""

    task: Task
    token: int
    run_id: str
    lease_expires_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    """How the run of `held` ended and what that does to its task."""

    held: Held
    action: Action
    outcome: RunOutcome
    result: Any = None
    error: str | None = None
    exit_code: int | None = None
    usage: dict[str, Any] | None = None
    defer_s: float | None = None
    final_commit: str | None = None  # the commit a task's worktree ends at
    retry: Outcome | None = None  # for FAIL: the retry policy's decision


@dataclass(frozen=True, slots=True, kw_only=True)
class ClaimAsk:
    """Up to `limit` tasks of these kinds and queues, each under a lease of `lease_s`."""

    limit: int
    kinds: tuple[str, ...]
    queues: tuple[str, ...]
    lease_s: float | None = None  # None: the settings' default


@dataclass(frozen=True, slots=True, kw_only=True)
class Exchanged:
    """What one exchange did: the reports refused as stale, the tasks newly held, and why
    nothing was claimed when the worker may not claim (drained, dead ...)."""

    stale: tuple[Report, ...] = ()
    held: tuple[Held, ...] = ()
    refused: str | None = None


def next_batch_size(
    current: int, claimed: int, *, mean_task_s: float | None, most: int, window_s: float
) -> int:
    """The next batch size: double while the queue fills it and it fits the time window.

    `claimed` is what the last claim got; `mean_task_s` how long its tasks took (None if
    unknown yet). Always between 1 and `most`.
    """
    if claimed < current:
        return max(1, claimed)
    if mean_task_s is not None and mean_task_s > 0:
        fits = int(window_s / mean_task_s)
        if fits < current * 2:
            return max(1, min(most, fits))
    return max(1, min(most, current * 2))
