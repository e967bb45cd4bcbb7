"""Approved tasks landed without a person's `corral merge` (`[worktree] merge_approved`).

Each reconcile pass merges every approved task onto its base, oldest approval first, one
after another, each onto the base the one before left: the review flow's own merge
(corral.usecases.reviews.merge: the approved commit pinned, the merge lock held, the remote's base
pushed with a remote of record), so tasks that edit the same file land in turn whenever
git can merge them, with no conflict step. One that git cannot merge goes back to ready
with its files recorded, as after a merge conflict, for its agent's next run; one git
refuses outright (its branch moved after approval, a dirty checkout) stays approved, with
the reason logged, for a person. The landed tasks' worktrees and branches are removed
after the last merge, so that no task's land waits for another's clean-up.
"""

from __future__ import annotations

import logging

from corral.foundation.errors import CorralError, InvalidTransition, Refused, StoreError
from corral.foundation.logs import event
from corral.foundation.policies import WorktreePolicy
from corral.git.merging import GitBranches
from corral.git.worktrees import Worktrees
from corral.model.actors import RECONCILER
from corral.model.reviews import MergeStrategy
from corral.model.states import TaskStatus
from corral.model.tasks import TaskFilter
from corral.store import Store
from corral.usecases import reviews


def merge_approved(
    store: Store, policy: WorktreePolicy, *, repo: str, log: logging.Logger
) -> tuple[str, ...] | None:
    """Merge the approved tasks; the ones landed (None: `merge_approved` is off)."""
    if not policy.merge_approved:
        return None
    approved = store.tasks.list_tasks(TaskFilter(statuses=(TaskStatus.APPROVED,)))
    if not approved:
        return ()
    # One view of the repository for the pass: with a remote, its branches fetched once.
    repository = GitBranches(Worktrees.open(repo, policy))
    strategy = MergeStrategy(policy.merge_strategy)
    landed = []
    for task in sorted(approved, key=lambda t: (t.updated_at, t.seq)):
        try:
            result = reviews.merge(
                store, task.id, branches=lambda: repository, strategy=strategy, clean_up=False
            )
        except StoreError:
            raise
        except (Refused, InvalidTransition) as exc:
            event(log, "task.merge_refused", logging.WARNING, task_id=task.id, reason=exc.message)
            continue
        except CorralError as exc:
            event(log, "task.merge_failed", logging.WARNING, task_id=task.id, error=exc.message)
            continue
        if not result.conflicts:
            landed.append(task.id)
            event(log, "task.merged", task_id=task.id, commit=result.merged_commit)
    _clean_up(store, repository, landed, log)
    return tuple(landed)


def _clean_up(
    store: Store, repository: GitBranches, landed: list[str], log: logging.Logger
) -> None:
    """After the last merge (so no task's land waits for another's clean-up): the landed
    tasks' worktrees and branches removed, as `corral merge` removes them."""
    reviewed = store.reviews.reviews_of(landed)
    for task_id in landed:
        task, review = store.tasks.get_task(task_id), reviewed.get(task_id)
        if task.branch is None or review is None or review.base_ref is None:
            continue
        try:
            with repository.locked():
                backups = repository.clean_up(
                    branch=task.branch, base=review.base_ref, worktree_path=review.worktree_path
                )
            store.reviews.record_cleanup(
                task_id, token=None, backups=tuple(backups), branch_deleted=True, actor=RECONCILER
            )
        except CorralError as exc:  # the task is landed; `worktree prune` finishes this
            event(
                log, "worktree.cleanup_failed", logging.WARNING, task_id=task_id, error=exc.message
            )
