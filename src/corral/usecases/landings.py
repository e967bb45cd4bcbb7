"""Use cases of landing: a finished task's branch brought onto its base when no review
stands between them, and the account of every branch corral made.

    running ──run succeeds with commits; worktree.land = merge──► on the base ──► done
        └── conflict ──► the files and a note recorded; the run fails (the retry policy
                         bounds the rounds; the next run merges the base in and resolves)
    done, branch kept (worktree.land = keep, or a land refused) ──`corral land`──► on the base
        └── conflict ──► ready on the same branch, as after a review merge conflict

Git stays behind the `Branches` protocol of the review flow (corral.usecases.reviews), plus
`is_merged`; the merge itself is the review flow's: built without touching a working tree,
under the repository's merge lock, the base moved by a compare-and-set. The land is
recorded after git has moved the base: a process killed between the two leaves work that
is on the base and a task that runs again, whose own land then finds nothing to add.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from corral.foundation.errors import Refused
from corral.model.reviews import merge_message
from corral.model.states import TaskStatus
from corral.usecases.reviews import Branches

if TYPE_CHECKING:
    from corral.model.reviews import MergeStrategy, Review
    from corral.model.tasks import Task
    from corral.store import Store

# Where a task's branch can be while its task is not finished.
_AT_WORK = {
    TaskStatus.BLOCKED: "working",
    TaskStatus.READY: "working",
    TaskStatus.RUNNING: "working",
    TaskStatus.WAITING: "working",  # for a person: it runs again once answered
    TaskStatus.IN_REVIEW: "in_review",
    TaskStatus.APPROVED: "in_review",
}


class LandingBranches(Branches, Protocol):
    """What landing needs of git: the review flow's branches, and whether work is merged."""

    def is_merged(self, branch: str, base: str) -> bool:
        """Whether `base` has every change of `branch` (squash- and cherry-pick-aware)."""
        ...

    def backups_of(self, branch: str) -> list[str]:
        """The backup refs corral wrote of `branch` before deleting it with unmerged work."""
        ...

    def contains(self, base: str, commit: str) -> bool:
        """Whether `commit` is on `base` (an ancestor of its tip, or the tip)."""
        ...

    def restore_branch(self, branch: str, ref: str) -> bool:
        """Make the deleted `branch` again at backup `ref`; whether it did."""
        ...

    def named(self, base: str) -> str:
        """How a task's worktree names the base of record (`origin/main` with a remote)."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class Landed:
    """What a land did: the base's new commit, or the conflicting files (nothing changed),
    or nothing because the base moved off the commit it was to land onto (`moved`)."""

    task: Task
    merged_commit: str | None = None
    conflicts: tuple[str, ...] = ()
    backups: tuple[str, ...] = ()
    moved: bool = False

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `corral land --json` (docs/cli.md)."""
        return {
            "task": self.task.to_dict(),
            "merged_commit": self.merged_commit,
            "conflicts": list(self.conflicts),
            "backups": list(self.backups),
        }


def conflict_note(base: str, files: tuple[str, ...]) -> str:
    """What the next run is told after its branch conflicted with the base."""
    return (
        f"landing this branch on {base} conflicted in {', '.join(files)}: merge {base} into "
        "this branch, resolve the conflicts and commit"
    )


def land(
    store: Store,
    task: Task,
    *,
    repo: LandingBranches,
    base: str,
    strategy: MergeStrategy,
    token: int | None,
    actor: str,
    onto: str | None = None,
) -> Landed:
    """Merge the task's branch into `base` and record it, or record the conflict; with
    `onto` (the base commit its verify step saw), only onto that commit: `moved`, having
    recorded nothing, when the base is elsewhere now.

    With `token` the caller is the runner that still holds the task's claim; without, the
    task is done (`corral land`), and a conflict sends it back to ready. The caller holds
    `repo.locked()`. Refused when git cannot merge at all (a dirty checkout of the base, a
    fast-forward that is not one), having changed nothing.
    """
    assert task.branch is not None
    message = merge_message("Land", strategy, branch=task.branch, title=task.title, task_id=task.id)
    attempt = repo.merge(
        branch=task.branch, base=base, strategy=strategy, message=message, onto=onto
    )
    if attempt.moved:
        return Landed(task=task, moved=True)
    if attempt.conflicts:
        after = store.reviews.land_conflict(
            task.id,
            token=token,
            files=attempt.conflicts,
            note=conflict_note(repo.named(base), attempt.conflicts),
            actor=actor,
        )
        return Landed(task=after, conflicts=attempt.conflicts)
    assert attempt.merged_commit is not None
    store.reviews.record_landing(
        task.id,
        token=token,
        branch=task.branch,
        base_ref=base,
        merged_commit=attempt.merged_commit,
        actor=actor,
    )
    return Landed(task=task, merged_commit=attempt.merged_commit)


def land_kept(
    store: Store, task_id: str, *, repo: LandingBranches, strategy: MergeStrategy, actor: str
) -> Landed:
    """`corral land`: land the kept branch of a done task, then remove it and its worktree.
    A branch corral deleted with work the base lacks is made again from the newest backup
    ref of it first, so that work lands too."""
    task = store.tasks.get_task(task_id)
    if task.status is not TaskStatus.DONE:
        raise Refused(f"cannot land task {task_id}: it is {task.status}, not done")
    review = store.reviews.get_review(task_id)
    if not task.branch or not review.base_ref:
        raise Refused(f"task {task_id} has no branch to land")
    with repo.locked():
        if repo.head_of(task.branch) is None:
            _bring_back(repo, task, review)
        landed = land(
            store,
            task,
            repo=repo,
            base=review.base_ref,
            strategy=strategy,
            token=None,
            actor=actor,
        )
        if landed.conflicts:
            return landed
        backups = repo.clean_up(
            branch=task.branch, base=review.base_ref, worktree_path=review.worktree_path
        )
    store.reviews.record_cleanup(
        task_id, token=None, backups=tuple(backups), branch_deleted=True, actor=actor
    )
    return Landed(task=task, merged_commit=landed.merged_commit, backups=tuple(backups))


def _bring_back(repo: LandingBranches, task: Task, review: Review) -> None:
    """Make the task's deleted branch again at the newest backup ref of its work; Refused,
    naming what happened to it, when there is none."""
    assert task.branch is not None
    refs = list(review.backup_refs) + repo.backups_of(task.branch)
    for ref in reversed(refs):
        if repo.restore_branch(task.branch, ref):
            return
    if review.branch_deleted:
        raise Refused(
            f"branch {task.branch} of task {task.id} was deleted by corral, holding nothing "
            f"{review.base_ref} lacked, and no backup ref of it is left"
        )
    raise Refused(
        f"branch {task.branch} of task {task.id} no longer exists (deleted outside corral)"
    )


class Where(StrEnum):
    """Where a task branch's work is (`corral branches`)."""

    LANDED = "landed"  # on the base: merged, squashed, cherry-picked, or its land recorded
    WORKING = "working"  # its task is not finished: the branch is being worked on
    IN_REVIEW = "in_review"  # in review or approved, waiting for `merge`
    KEPT = "kept"  # its task is finished and the work is not on the base: `corral land`
    ABANDONED = "abandoned"  # deleted with work the base lacks: a backup ref holds it


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchState:
    """One branch corral made for a task, where its work is, and what the store recorded
    of where its last run's work ended (`state`: model.reviews.WorkOutcome)."""

    task: Task
    branch: str
    base_ref: str | None
    where: Where
    head: str | None
    merged_commit: str | None
    backups: tuple[str, ...] = ()
    state: str | None = None
    pr_url: str | None = None

    @property
    def sha(self) -> str | None:
        """The commit that holds the work: the one that reached the base once landed,
        else the branch's head."""
        return self.merged_commit if self.where is Where.LANDED else self.head

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `corral branches --json` (docs/cli.md)."""
        return {
            "task_id": self.task.id,
            "task_status": str(self.task.status),
            "title": self.task.title,
            "branch": self.branch,
            "base_ref": self.base_ref,
            "where": str(self.where),
            "state": self.state,
            "sha": self.sha,
            "head": self.head,
            "merged_commit": self.merged_commit,
            "backups": list(self.backups),
            "backup_refs": list(self.backups),
            "pr_url": self.pr_url,
        }


def branch_states(store: Store, repo: LandingBranches) -> list[BranchState]:
    """Every task branch corral recorded, oldest task first, with where its work is."""
    tasks = store.reviews.branched_tasks()
    reviews = store.reviews.reviews_of([t.id for t in tasks])
    return [_state(repo, task, reviews.get(task.id)) for task in tasks]


def _state(repo: LandingBranches, task: Task, review: Review | None) -> BranchState:
    """What the store recorded of the branch's work, checked against git."""
    assert task.branch is not None
    head = repo.head_of(task.branch)
    recorded = () if review is None else review.backup_refs
    found = () if head is not None else tuple(repo.backups_of(task.branch))
    backups = recorded + tuple(ref for ref in found if ref not in recorded)
    landed = _landed_at(repo, review)
    return BranchState(
        task=task,
        branch=task.branch,
        base_ref=None if review is None else review.base_ref,
        where=Where.LANDED if landed else _where(repo, task, review, head, backups),
        head=head,
        merged_commit=None if review is None else review.merged_commit,
        backups=backups,
        state=None if review is None or review.outcome is None else str(review.outcome),
        pr_url=None if review is None else review.pr_url,
    )


def _landed_at(repo: LandingBranches, review: Review | None) -> bool:
    """Whether the store recorded a land whose commit git finds on the base still."""
    if review is None or review.merged_commit is None or review.base_ref is None:
        return False
    return repo.contains(review.base_ref, review.merged_commit)


def _where(
    repo: LandingBranches,
    task: Task,
    review: Review | None,
    head: str | None,
    backups: tuple[str, ...],
) -> Where:
    """A branch corral deleted held nothing the base lacks, unless it left a backup ref."""
    at_work = _AT_WORK.get(task.status)
    if at_work is not None:
        return Where(at_work)
    if head is None:
        return Where.ABANDONED if backups else Where.LANDED
    base = None if review is None else review.base_ref
    if base and repo.is_merged(task.branch or "", base):
        return Where.LANDED
    return Where.KEPT
