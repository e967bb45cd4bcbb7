"""Reviews: what corral keeps about a task's branch while it is reviewed and merged.

The task's status says where the review stands (in_review, approved, done, or ready
again); the review keeps the details: the base the branch came from, the notes, the
commit that was approved (merge refuses any other), the files of a merge conflict.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any

from corral.foundation.durations import iso
from corral.foundation.records import field, record


class WorkOutcome(StrEnum):
    """Where a task's work in a worktree ended (docs/review.md, Where the work is)."""

    LANDED = "landed"  # on the base of record, at the recorded merged_commit
    IN_REVIEW = "in_review"  # submitted for review
    KEPT = "kept"  # the branch stays: `worktree.land = keep`, or a land that needs a person
    NO_CHANGE = "no_change"  # the run left no new commit and nothing to commit
    REFUSED = "refused"  # the agent reported it was denied what it needed


# How far back `corral status` and `status --watch` count where tasks' work ended: a day's
# work, the span a person catching up looks at (both screens say "24h").
RECENT_WORK_S = 86400.0


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


def merge_message(
    verb: str, strategy: MergeStrategy, *, branch: str, title: str, task_id: str
) -> str:
    """The message of the commit a merge or land makes. A merge commit says which branch
    it brought in (`Merge corral/w1/t-1: title (t-1)`); a squash commit is the task's work
    itself, so it is titled by the task, as a person squashing would title it, and names
    the task and branch below."""
    if strategy is MergeStrategy.SQUASH:
        return f"{title}\n\ncorral task {task_id}, squashed from {branch}"
    return f"{verb} {branch}: {title} ({task_id})"


@record(frozen=True, slots=True, kw_only=True)
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
    # What the last run that disabled tests disabled (git/disabled_tests.py), one line each
    tests_disabled: tuple[str, ...] = ()

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
            "tests_disabled": list(self.tests_disabled),
        }


@record(frozen=True, slots=True, kw_only=True)
class WorkEnd:
    """One task's work where it ended: a landed one's commit, a kept one's branch."""

    task_id: str
    title: str
    ended_at: datetime | None  # when the outcome was recorded
    commit: str | None = None  # landed: the commit on the base of record
    branch: str | None = None  # kept: the branch `corral land` lands
    pr_url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md, `status`)."""
        return {
            "task_id": self.task_id,
            "title": self.title,
            "ended_at": iso(self.ended_at),
            "commit": self.commit,
            "branch": self.branch,
            "pr_url": self.pr_url,
        }


@record(frozen=True, slots=True, kw_only=True)
class WorkEnds:
    """Where tasks' work ended: how many reached each outcome since `since`, the done tasks
    whose branch is kept for a person (oldest first) and the newest landed, a few each."""

    since: datetime
    counts: Mapping[str, int] = field(default_factory=dict)  # WorkOutcome value -> tasks
    kept: tuple[WorkEnd, ...] = ()
    landed: tuple[WorkEnd, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md, `status`)."""
        return {
            "since": iso(self.since),
            "counts": {str(o): self.counts.get(str(o), 0) for o in WorkOutcome},
            "kept": [w.to_dict() for w in self.kept],
            "landed": [w.to_dict() for w in self.landed],
        }


def waiting_s(since: datetime, now: datetime) -> float:
    """Seconds a review has waited."""
    return max(0.0, (now - since).total_seconds())


def is_stale(since: datetime, now: datetime, stale_after_s: float) -> bool:
    """Whether a review waiting since `since` has waited longer than `stale_after_s`."""
    return waiting_s(since, now) > stale_after_s
