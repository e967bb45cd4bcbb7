"""Claiming and reporting tasks: the one exchange every claim and every outcome goes through.

One write transaction carries both ways (`store.claims.exchange`, store/exchange.py):
`Report`s of what happened to claimed tasks (complete, fail, defer, release), then, if
asked (`ClaimAsk`), up to k more tasks claimed, each `Held` with its own claim, fencing
token, lease and, for a runner, run record. `corral done`, `claim_next`, `claim:release`
and the runner's batches are the same operation with one report, one claim, or many. A
report applies only under a claim that is still active: a token ended elsewhere (`corral
done` by the agent, the reconciler, a cancel) comes back stale and nothing of that task
changes.

A runner's k adapts (`next_batch_size`): it doubles while the queue fills the whole batch
and the tasks are quick enough that a batch fits in `window_s`; it drops to what the queue
gave (1 when the queue is shallow) and shrinks when tasks are slow, so a lone task is
picked up at once and a slow queue is not hoarded by one worker.

The records are NamedTuples, not frozen dataclasses (STYLE habit 12), on purpose: `corral
claim` and `corral done` import them in a fresh process each time, and building a frozen
slotted dataclass class costs about 1.5 ms at import against 0.2 ms for a NamedTuple
(bench/cli_latency.py). They are immutable all the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, NamedTuple

from corral.model.states import TaskStatus

if TYPE_CHECKING:
    from corral.model.backoff import Outcome
    from corral.model.claims import Claim
    from corral.model.runs import RunOutcome
    from corral.model.tasks import Task


class Action(StrEnum):
    """What a report does to its task."""

    COMPLETE = "complete"  # done, or in_review
    FAIL = "fail"  # ready after a backoff, or failed (the retry policy decides)
    DEFER = "defer"  # ready after a delay, the attempt not counted
    RELEASE = "release"  # ready now, the attempt not counted
    WAIT = "wait"  # waiting for a person (its reason), the attempt not counted


def completed_to(requires_review: bool) -> TaskStatus:
    """Where a completion takes its task: in_review when a person approves its work first
    (`requires_review`, fixed when the task is made), else done, which finishes it."""
    return TaskStatus.IN_REVIEW if requires_review else TaskStatus.DONE


# That decision over its one input, as both dialects take it (the exchange's parameter
# completed_to): the status a completion takes a task to, indexed by requires_review (0,
# 1). The SQL looks its task's up; it decides nothing.
COMPLETED_TO = (completed_to(requires_review=False), completed_to(requires_review=True))


# What a report from outside a run notes on its claim's open run, by action, for the run to
# end as when it finishes (a release notes nothing: the run then ends as lease_lost). Both
# dialects take it from here (the PostgreSQL function as the report's `reported`).
REPORTED = {
    Action.COMPLETE: "done",
    Action.FAIL: "failed",
    Action.DEFER: "deferred",
    Action.WAIT: "waiting",
}


class RunStart(NamedTuple):
    """What the run record of a newly claimed task says about how it runs."""

    command: tuple[str, ...]
    cwd: str
    prompt: str | None = None
    transcript_path: str | None = None
    stderr_path: str | None = None
    base_commit: str | None = None  # the commit a task's worktree starts from
    site: str | None = None  # where that worktree is (TaskWorktrees.site): the task's now


class Held(NamedTuple):
    """A task claimed in an exchange, with its claim and its open run (None when the claim
    opened none: `claim`, `claim_next`)."""

    task: Task
    token: int
    run_id: str | None
    lease_expires_at: datetime
    claimed_at: datetime
    deadline_at: datetime | None

    def opened_run(self) -> str:
        """The id of the run the claim opened: a runner's claims always open one."""
        assert self.run_id is not None, "this claim opened no run"
        return self.run_id


class Report(NamedTuple):
    """What happened to a claimed task and what that does to it (`action`), under its claim.

    A runner reports each task it ran, with the run it finishes (`run_id`, `outcome` and
    what the run produced); a command such as `corral done` reports from outside a run
    (`run_id` None), and the task's open run records what was reported under its token.
    `token` None acts as an operator on whatever claim is active; `holder` also requires
    the claim to be that worker's.
    """

    task_id: str
    token: int | None
    action: Action
    actor: str
    run_id: str | None = None
    holder: str | None = None
    seen: Task | None = None  # FAIL: the task under this claim; its attempts decide the retry
    outcome: RunOutcome | None = None  # with run_id: how the run ended
    result: Any = None
    error: str | None = None
    exit_code: int | None = None
    usage: dict[str, Any] | None = None
    final_commit: str | None = None  # the commit a task's worktree ends at
    delay_s: float | None = None  # DEFER: ready again this long from now ...
    run_at: datetime | None = None  # ... or at this instant
    reason: str | None = None  # RELEASE, DEFER: recorded on the event; WAIT: on the task too
    retry: Outcome | None = None  # FAIL: the retry policy's decision (the use case makes it)

    @classmethod
    def of(cls, held: Held, action: Action, outcome: RunOutcome, **fields: Any) -> Report:
        """The report of the run of `held`, made by the runner that holds it."""
        return cls(
            task_id=held.task.id,
            token=held.token,
            action=action,
            actor=f"token:{held.token}",
            run_id=held.run_id,
            seen=held.task,
            outcome=outcome,
            **fields,
        )


class ClaimAsk(NamedTuple):
    """Up to `limit` tasks of these kinds and queues (or task `task_id` alone), each under a
    lease of `lease_s`; with `run`, each claim opens a run that it describes. With
    `claims_only` the exchange gives back the claims (`Exchanged.claims`), not the tasks
    held: all a `corral claim` shows, and a task's record costs a command's start-up."""

    limit: int
    kinds: tuple[str, ...] = ()
    queues: tuple[str, ...] = ()
    task_id: str | None = None
    lease_s: float | None = None  # None: the settings' default
    run: RunStart | None = None
    claims_only: bool = False


class Exchanged(NamedTuple):
    """What one exchange did.

    `stale`: the reports whose claim had ended elsewhere; nothing of their task changed,
    and each one's run was finished as `settled` says (by run id: what was reported under
    its token, else lease_lost). `held`: the tasks newly claimed. `refused`: why the worker
    may take no claim now (drained, dead ...); `full`: why it could take none now (it holds
    max_concurrent claims). `claims`: the claims made, for an ask with `claims_only`.
    `tasks`: each applied report's task as it is now, when asked for. `waited`: the claim
    found nothing and waited for work as long as it could (an HTTP store's long poll), so
    asking again at once is no busy loop.
    """

    stale: tuple[Report, ...] = ()
    settled: Mapping[str, str] = {}
    held: tuple[Held, ...] = ()
    claims: tuple[Claim, ...] = ()
    refused: str | None = None
    full: str | None = None
    tasks: tuple[Task, ...] = ()
    waited: bool = False


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
