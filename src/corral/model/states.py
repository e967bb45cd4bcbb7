"""The state machines of tasks, claims and workers, and the transitions each action may make.

Apart from the records (model/tasks.py, model/claims.py, model/workers.py) so that what
only compares states, above all the store's SQL parameters, does not build every record
class on a command's import path (bench/cli_latency.py).

Tasks:

    blocked ──(all dependencies done)──► ready ──claim──► running ──done──► done
                                           ▲                 │   └─done, review required─► in_review
                                           │                 │
                                           └──── fail or lost lease, attempts left,
                                                 after a backoff (run_after)
                                                             │
                          attempts used up, or lost leases ──┴──► failed   (reason: error, poison …)
    running ──release, or defer (run_after set)──► ready   (the attempt is given back)
    running ──a person must act (no change, refused, a question)──► waiting
                                           (the attempt is given back; worktree and session kept)
    waiting ──answer (its text reaches the resumed session), or retry──► ready
    running ──submit──► in_review ──approve (pins the commit)──► approved ──merge──► done
                        in_review | approved ──request-changes──► ready (same branch)
                        in_review | approved ──pull request checks failed──► ready (same
                                    branch; verify_retries in a row), then ──► waiting
                                               approved ──merge conflict──► ready (files recorded)
    done (its branch kept) ──land that conflicts──► ready (same branch, files recorded)
    ready ──a child added (--parent)──► blocked   (until each child is done or cancelled)
    blocked | ready | running | waiting | in_review | approved ──cancel──► cancelled
                                                  (and every unfinished descendant with it)
    failed | cancelled | waiting ──retry──► ready (or blocked while a dependency is not done)

A task with a failed or cancelled dependency stays blocked; `corral why` names the culprit.
`attempts` counts claims that reached an outcome: a claim adds one, a release or a defer
gives it back.

Claims: active until completed (done or fail), released, or expired; corral.model.claims states
their invariants.

Workers:

    starting ──first heartbeat──► idle ⇄ busy ──drain──► draining ──deregister──► offline
                                   │      │
                                   └──────┴── one missed heartbeat ──► stale
    stale ──heartbeat──► idle | busy
    stale ──dead_after_missed heartbeats missed──► dead   (its claims expire at once)

A heartbeat counts as missed half an interval after it was due (0.75 s at most, so a
worker is stale 10.75 s after its last heartbeat at the default 10 s), so a worker that
beats on time but a little late is never stale. idle and busy follow the worker's active
claims.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class TaskStatus(StrEnum):
    """Where a task is in its life."""

    BLOCKED = "blocked"
    READY = "ready"
    RUNNING = "running"
    WAITING = "waiting"  # a person must act: the reason is recorded on the task
    IN_REVIEW = "in_review"
    APPROVED = "approved"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


FINAL = frozenset({TaskStatus.DONE, TaskStatus.FAILED, TaskStatus.CANCELLED})
# The states of a task whose agent finished its work (`done`, `submit`): what it did stands.
FINISHED_WELL = frozenset({TaskStatus.DONE, TaskStatus.IN_REVIEW, TaskStatus.APPROVED})

# action -> the states it may start from. Stores pass these sets into their UPDATEs
# (`WHERE status IN (...)`), so this table is the only copy of the state machine.
ALLOWED_FROM: dict[str, frozenset[TaskStatus]] = {
    "claim": frozenset({TaskStatus.READY}),
    "renew": frozenset({TaskStatus.RUNNING}),
    "release": frozenset({TaskStatus.RUNNING}),
    "defer": frozenset({TaskStatus.RUNNING}),
    # A run that needs a person (model/waiting.py names the reasons); `corral answer` ends it.
    "wait": frozenset({TaskStatus.RUNNING}),
    "answer": frozenset({TaskStatus.WAITING}),
    "complete": frozenset({TaskStatus.RUNNING}),
    "fail": frozenset({TaskStatus.RUNNING}),
    "recover": frozenset({TaskStatus.RUNNING}),
    "unblock": frozenset({TaskStatus.BLOCKED}),
    # A child added to a parent that has not started: the parent waits (model/subtasks.py).
    "block": frozenset({TaskStatus.READY, TaskStatus.BLOCKED}),
    "cancel": frozenset(set(TaskStatus) - FINAL),
    "retry": frozenset({TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.WAITING}),
    "reprioritise": frozenset(set(TaskStatus) - FINAL),
    # The review flow (corral.usecases.reviews): the branch is handed in, approved at a pinned
    # commit, merged; changes requested or a merge conflict send it back to work.
    "submit": frozenset({TaskStatus.RUNNING}),
    "approve": frozenset({TaskStatus.IN_REVIEW}),
    "request_changes": frozenset({TaskStatus.IN_REVIEW, TaskStatus.APPROVED}),
    "merge": frozenset({TaskStatus.APPROVED}),
    # A pull request the runner opened (`worktree.land = pr`) merged on the forge.
    "merge_pr": frozenset({TaskStatus.IN_REVIEW, TaskStatus.APPROVED}),
    # Its checks failed (git/pr_checks.py): back to its agent, or past the verify retries,
    # waiting for a person (model/verify_retries.py).
    "checks_failed": frozenset({TaskStatus.IN_REVIEW, TaskStatus.APPROVED}),
    # Landing (corral.usecases.landings): a finished task's kept branch brought onto its base.
    "land": frozenset({TaskStatus.DONE}),
}


class ClaimStatus(StrEnum):
    """A claim is active until it is completed (done or fail), released, or expired."""

    ACTIVE = "active"
    RELEASED = "released"
    EXPIRED = "expired"
    COMPLETED = "completed"


class WorkerStatus(StrEnum):
    """Where a worker is in its life."""

    STARTING = "starting"
    IDLE = "idle"
    BUSY = "busy"
    DRAINING = "draining"
    STALE = "stale"
    DEAD = "dead"
    OFFLINE = "offline"


# Workers that may take new claims, and workers the reconciler still watches.
CLAIMING = frozenset({WorkerStatus.STARTING, WorkerStatus.IDLE, WorkerStatus.BUSY})
WATCHED = CLAIMING | {WorkerStatus.DRAINING, WorkerStatus.STALE}
GONE = frozenset({WorkerStatus.DEAD, WorkerStatus.OFFLINE})

# The three statuses of seed 002's worker registry (ONLINE, DRAINING, OFFLINE), as groups
# of corral's: accepting work, finishing what it holds, not available (silent past its
# heartbeat, dead or gone). A status filter takes them beside corral's own (`worker list
# --status ONLINE`); a name that is corral's own (`offline`: deregistered) stays its own.
REGISTRY_STATUSES: dict[str, frozenset[WorkerStatus]] = {
    "online": CLAIMING,
    "draining": frozenset({WorkerStatus.DRAINING}),
    "offline": frozenset({WorkerStatus.STALE}) | GONE,
}


def worker_statuses(names: Iterable[str]) -> tuple[WorkerStatus, ...]:
    """The worker statuses `names` mean: corral's own, else the registry's groups in any
    case (`online`, `ONLINE`, `OFFLINE`); ValueError naming the first that is neither."""
    found: dict[WorkerStatus, None] = {}
    for name in names:
        try:
            group = frozenset({WorkerStatus(name)})
        except ValueError:
            group = REGISTRY_STATUSES.get(name.lower(), frozenset())
        if not group:
            raise ValueError(name)
        found.update(dict.fromkeys(sorted(group)))
    return tuple(found)


# Operator actions -> the states they may start from (the store passes these to its SQL).
# Heartbeats, claims and the reconciler move workers by the rules in the diagram above.
WORKER_ALLOWED_FROM: dict[str, frozenset[WorkerStatus]] = {
    "drain": frozenset(
        {WorkerStatus.STARTING, WorkerStatus.IDLE, WorkerStatus.BUSY, WorkerStatus.STALE}
    ),
    "deregister": WATCHED | {WorkerStatus.DEAD},
}
