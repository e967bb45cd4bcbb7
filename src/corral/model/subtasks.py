"""Subtasks: the rules of a parent and its children (`corral add --parent ID`).

A child is made with its parent and never moves. By default the parent waits for its
children: adding a child to a parent that has not started (ready or blocked) makes the
parent `blocked`, and the store records the wait as a dependency of the parent on the child,
so the claim query, `why` and the unblocking of dependents stay what they are for
`--depends-on`. With `parent_runs_first` the edge points the other way: the child waits
for its parent to be done (a planner that runs, then hands out the work it planned).

    parent ready|blocked ──add child──► blocked ──every child done or cancelled──► ready
    child failed for good: the parent stays blocked until the child is retried (and done)
                           or cancelled; `why` names the child
    parent cancelled ──► each unfinished descendant cancelled in the same transaction

Cycles cannot happen through parents alone (a child is new when it gets its parent); a new
child's own dependencies must not lead back to the parent, which the store checks.
"""

from __future__ import annotations

from corral.foundation.errors import InvalidInput
from corral.model.states import TaskStatus

# A child is at most this many levels below the task with no parent, and a parent has at
# most this many children: bounds on the cascade of one cancel and on `show`'s listing.
MAX_DEPTH = 8
MAX_CHILDREN = 1000

# The states a parent may be in when a child that it waits for is added: it has not started.
WAITS_FROM = frozenset({TaskStatus.READY, TaskStatus.BLOCKED})


def check_parentage(parent_id: str | None, runs_first: bool, depends_on: tuple[str, ...]) -> None:
    """What a new task's own fields can say: a flag needs a parent, and a parent that
    waits for this child cannot also be this child's dependency."""
    if runs_first and parent_id is None:
        raise InvalidInput("parent_runs_first", "only with a parent (--parent ID)")
    if parent_id is not None and not runs_first and parent_id in depends_on:
        raise InvalidInput(
            "depends_on", "not the parent, which waits for its children (or --parent-runs-first)"
        )


def check_parent(
    parent_id: str, status: TaskStatus, *, depth: int, children: int, runs_first: bool
) -> None:
    """Whether `parent_id` (at `depth`, with `children` already) may take one more child."""
    if status in (TaskStatus.DONE, TaskStatus.FAILED, TaskStatus.CANCELLED):
        raise InvalidInput("parent", f"an unfinished task ({parent_id} is {status})")
    if not runs_first and status not in WAITS_FROM:
        raise InvalidInput(
            "parent",
            f"a task that has not started ({parent_id} is {status}); "
            "a running parent takes children with --parent-runs-first",
        )
    if depth + 1 > MAX_DEPTH:
        raise InvalidInput("parent", f"a task at most {MAX_DEPTH - 1} levels deep", parent_id)
    if children >= MAX_CHILDREN:
        raise InvalidInput("parent", f"a task with fewer than {MAX_CHILDREN} children", parent_id)
