"""Reviews: what corral keeps about a task's branch while it is reviewed and merged.

The task's status says where the review stands (in_review, approved, done, or ready
again); the review keeps the details: the base the branch came from, the notes, the
commit that was approved (merge refuses any other), the files of a merge conflict.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class WorkOutcome(StrEnum):
    """Where a task's work in a worktree ended (docs/review.md, Where the work is)."""

    LANDED = "landed"  # on the base of record, at the recorded merged_commit
    IN_REVIEW = "in_review"  # submitted for review
    KEPT = "kept"  # the branch stays: `worktree.land = keep`, or a land that needs a person
    NO_CHANGE = "no_change"  # the run left no new commit and nothing to commit
    REFUSED = "refused"  # the agent reported it was denied what it needed


class PullRequestState(StrEnum):
    """Where a task's pull request stands (`worktree.land = pr`), as its forge says."""

    OPEN = "open"  # (an unset state with a pull request's URL is open too)
    MERGED = "merged"  # the task is done, the forge's merge commit recorded
    CLOSED = "closed"  # closed unmerged: the task is in review in corral again


class MergeStrategy(StrEnum):
    """How `merge` brings an approved branch into its base."""

    FF = "ff"  # fast-forward only: the branch must already contain the base
    MERGE = "merge"  # a merge commit, always
    SQUASH = "squash"  # one new commit with the branch's changes


@dataclass(frozen=True, slots=True, kw_only=True)
class Review:
    """The review record of one task; every field but `task_id` may be unset."""

    task_id: str
    base_ref: str | None = None
    worktree_path: str | None = None
    note: str | None = None
    pr_url: str | None = None
    pr_state: str | None = None  # PullRequestState of the pull request at pr_url
    approved_commit: str | None = None
    approve_note: str | None = None
    changes_note: str | None = None
    conflict_files: tuple[str, ...] | None = None
    merged_commit: str | None = None
    outcome: WorkOutcome | None = None
    backup_refs: tuple[str, ...] = ()  # written by corral before it removed work, oldest first
    branch_deleted: bool = False  # corral deleted the branch itself (after a land, say)

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "base_ref": self.base_ref,
            "worktree_path": self.worktree_path,
            "note": self.note,
            "pr_url": self.pr_url,
            "pr_state": self.pr_state,
            "approved_commit": self.approved_commit,
            "approve_note": self.approve_note,
            "changes_note": self.changes_note,
            "conflict_files": None if self.conflict_files is None else list(self.conflict_files),
            "merged_commit": self.merged_commit,
            "outcome": None if self.outcome is None else str(self.outcome),
            "backup_refs": list(self.backup_refs),
            "branch_deleted": self.branch_deleted,
        }


def waiting_s(since: datetime, now: datetime) -> float:
    """Seconds a review has waited."""
    return max(0.0, (now - since).total_seconds())


def is_stale(since: datetime, now: datetime, stale_after_s: float) -> bool:
    """Whether a review waiting since `since` has waited longer than `stale_after_s`."""
    return waiting_s(since, now) > stale_after_s
