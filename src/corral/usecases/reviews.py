"""Use cases of the review flow: submit, approve, request changes, merge, list, show.

    running ──submit (or success of a task that requires review)──► in_review
    in_review ──approve (pins the branch's head)──► approved ──merge──► done
    in_review | approved ──request-changes──► ready (same branch; the note goes to the next run)
    approved ──merge conflict──► ready (the conflicting files recorded)
    in_review | approved ──its pull request merged (`land = pr`)──► done

Git stays behind the `Branches` protocol (implemented in corral.git.merging), so these
functions decide and the store applies; a factory is passed rather than a repository so a
task without a branch never needs git at all. Every state change is the store's
compare-and-set; merge additionally holds the repository's merge lock from its checks to
its recording, so two merges never interleave.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from corral.foundation.errors import InvalidInput, Refused
from corral.model.actors import OPERATOR, RECONCILER
from corral.model.reviews import MergeStrategy, Review, is_stale, merge_message, waiting_s
from corral.model.states import TaskStatus
from corral.model.tasks import Task, TaskFilter
from corral.store import Store

PENDING = (TaskStatus.IN_REVIEW, TaskStatus.APPROVED)


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeAttempt:
    """What a merge into the base did: the new base commit, or the files that conflict, or
    (`moved`) nothing, because the base is no longer at the commit it was to be built on."""

    merged_commit: str | None = None
    conflicts: tuple[str, ...] = ()
    moved: bool = False


# How often `show` reads a branch that keeps moving under it before it gives up.
READS = 3
# A commit named by a reviewer: abbreviated (7 at least, as git shows them) or whole.
_COMMIT_ID = re.compile(r"[0-9a-fA-F]{7,64}")


class Branches(Protocol):
    """What the review flow needs of git."""

    def head_of(self, branch: str) -> str | None:
        """The commit at the tip of `branch`, or None when it does not exist."""
        ...

    def diff_stat(self, base: str, branch: str) -> str:
        """`git diff --stat BASE...BRANCH`."""
        ...

    def diff(self, base: str, branch: str) -> str:
        """`git diff BASE...BRANCH`: every change, as a patch."""
        ...

    def landed_diff(self, base: str, commit: str, *, stat: bool) -> str | None:
        """What landed commit `commit` brought to `base`: its diff against its first
        parent (`--stat` with `stat`); None when the base of record lacks the commit."""
        ...

    def is_on_top(self, branch: str, base: str) -> bool:
        """Whether `branch` holds every commit of `base` (it was rebased onto it, or
        started from its current tip)."""
        ...

    def locked(self) -> AbstractContextManager[None]:
        """The repository's merge lock."""
        ...

    def merge(
        self,
        *,
        branch: str,
        base: str,
        strategy: MergeStrategy,
        message: str,
        onto: str | None = None,
    ) -> MergeAttempt:
        """Merge `branch` into `base`, or report the conflicts and change nothing; with
        `onto`, only onto that base commit (`moved` otherwise)."""
        ...

    def clean_up(self, *, branch: str, base: str, worktree_path: str | None) -> list[str]:
        """Remove the branch's worktree and the branch; the backup refs written first."""
        ...


BranchesFactory = Callable[[], Branches]


@dataclass(frozen=True, slots=True, kw_only=True)
class MergeResult:
    """A merge's end: the task (done, or ready again after a conflict) and the details."""

    task: Task
    merged_commit: str | None
    conflicts: tuple[str, ...]
    backups: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingReview:
    """A task waiting in review (or approved and waiting to be merged)."""

    task: Task
    review: Review
    waiting_s: float
    stale: bool

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md)."""
        return {
            "id": self.task.id,
            "title": self.task.title,
            "status": str(self.task.status),
            "branch": self.task.branch,
            "waiting_s": round(self.waiting_s, 3),
            "stale": self.stale,
            **self.review.to_dict(),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ReviewDetail:
    """One task's review as `review show` shows it; `diff_stat` is None without a branch.
    `diff`, the whole patch, is read only when asked for (`review show --patch`, the
    dashboard). Of a task that landed and whose branch corral then deleted, both show the
    landed commit (`landed_commit`) against its first parent: what reached the base."""

    task: Task
    review: Review
    diff_stat: str | None
    diff: str | None = None
    landed_commit: str | None = None  # the branch landed there (then corral deleted it)
    head: str | None = None  # the branch's commit the diff shows: `approve --commit` names it

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `review show --json` (docs/cli.md)."""
        return {
            "task": self.task.to_dict(),
            "review": self.review.to_dict(),
            "head": self.head,
            "diff_stat": self.diff_stat,
            "diff": self.diff,
            "landed_commit": self.landed_commit,
        }


def submit(
    store: Store,
    task_id: str,
    *,
    token: int | None = None,
    note: str | None = None,
    pr_url: str | None = None,
) -> Task:
    """Hand a running task's branch in for review (the agent, or its runner, calls this)."""
    if pr_url is not None and not _web_url(pr_url):
        raise InvalidInput("pr_url", "an http(s) URL with a host", pr_url)
    actor = f"token:{token}" if token is not None else OPERATOR
    return store.reviews.submit(task_id, token=token, note=note, pr_url=pr_url, actor=actor)


def _web_url(url: str) -> bool:
    """An http(s) URL naming a host, printable: a pull request's address, shown and opened."""
    from urllib.parse import urlsplit  # noqa: PLC0415 - submit with --pr-url alone

    try:
        parts = urlsplit(url)
    except ValueError:  # a malformed IPv6 host
        return False
    return parts.scheme in {"http", "https"} and bool(parts.hostname) and url.isprintable()


def approve(
    store: Store,
    task_id: str,
    *,
    branches: BranchesFactory,
    note: str | None = None,
    require_rebase: bool = False,
    seen: str | None = None,
) -> Task:
    """in_review -> approved at the branch's current head, which `merge` will insist on;
    with `require_rebase` (`[worktree] require_rebase`), only a branch on top of its base.
    `seen` (`approve --commit`, the dashboard's button) is the head the reviewer was shown
    (`review show`): a branch that has moved since is refused, not approved unseen."""
    if seen is not None and not _COMMIT_ID.fullmatch(seen):
        raise InvalidInput("commit", "a commit id of 7 to 64 hexadecimal digits", seen)
    task = store.tasks.get_task(task_id)
    if task.status is not TaskStatus.IN_REVIEW:
        raise Refused(f"cannot approve task {task_id}: it is {task.status}, not in_review")
    commit = None
    if seen is not None and not task.branch:
        raise Refused(f"cannot approve task {task_id} at {seen}: it has no branch")
    if task.branch:
        repo = branches()
        commit = _head(repo, task)
        if seen is not None and not commit.startswith(seen.lower()):
            raise Refused(
                f"cannot approve task {task_id} at {seen}: its branch {task.branch} is now at "
                f"{commit[:12]}; review it again (`corral review show {task_id}`)"
            )
        base = store.reviews.get_review(task_id).base_ref
        if require_rebase and base and not repo.is_on_top(task.branch, base):
            raise Refused(
                f"cannot approve task {task_id}: branch {task.branch} is not on top of {base} "
                f"(require_rebase): request changes so that it is rebased"
            )
    return store.reviews.approve(task_id, commit=commit, note=note, actor=OPERATOR)


def request_changes(store: Store, task_id: str, *, note: str) -> Task:
    """Send a reviewed task back to ready on its branch, with `note` for its next run."""
    if not note.strip():
        raise InvalidInput("note", "a non-empty note saying what to change")
    return store.reviews.request_changes(task_id, note=note, actor=OPERATOR)


def merge(
    store: Store,
    task_id: str,
    *,
    branches: BranchesFactory,
    strategy: MergeStrategy,
    clean_up: bool = True,
) -> MergeResult:
    """Merge an approved task's branch into its base and mark it done; with `clean_up`,
    then remove its worktree and branch (a queue of merges does that after the last one).

    Refused, changing nothing, when the task is not approved, its branch is gone or moved
    after approval, or the base checkout is dirty. A conflict sends the task back to ready
    with the files recorded. A task without a branch has nothing to merge: it is done.
    """
    task = store.tasks.get_task(task_id)
    if task.status is not TaskStatus.APPROVED:
        raise Refused(f"cannot merge task {task_id}: it is {task.status}, not approved")
    review = store.reviews.get_review(task_id)
    if not task.branch:
        done = store.reviews.finish_merge(
            task_id, approved_commit=review.approved_commit, merged_commit=None, actor=OPERATOR
        )
        return MergeResult(task=done, merged_commit=None, conflicts=())
    repo = branches()
    base = review.base_ref
    if not base:
        raise Refused(f"task {task_id} has no base recorded for branch {task.branch}")
    with repo.locked():
        _check_pinned(repo, task, review)
        message = merge_message(
            "Merge", strategy, branch=task.branch, title=task.title, task_id=task.id
        )
        attempt = repo.merge(branch=task.branch, base=base, strategy=strategy, message=message)
        if attempt.conflicts:
            reopened = store.reviews.merge_conflict(
                task_id,
                approved_commit=review.approved_commit,
                files=attempt.conflicts,
                actor=OPERATOR,
            )
            return MergeResult(task=reopened, merged_commit=None, conflicts=attempt.conflicts)
        done = store.reviews.finish_merge(
            task_id,
            approved_commit=review.approved_commit,
            merged_commit=attempt.merged_commit,
            actor=OPERATOR,
        )
        backups = (
            repo.clean_up(branch=task.branch, base=base, worktree_path=review.worktree_path)
            if clean_up
            else []
        )
    if clean_up:
        store.reviews.record_cleanup(
            task_id, token=None, backups=tuple(backups), branch_deleted=True, actor=OPERATOR
        )
    return MergeResult(
        task=done, merged_commit=attempt.merged_commit, conflicts=(), backups=tuple(backups)
    )


def settle_pull_request(
    store: Store, task_id: str, *, pr_url: str, merged_commit: str | None
) -> Task:
    """The task's pull request merged at `merged_commit` (done), or closed unmerged (None:
    it stays in review for a person); `worktree.land = pr` (git/pull_requests.py)."""
    return store.reviews.settle_pull_request(
        task_id, pr_url=pr_url, merged_commit=merged_commit, actor=RECONCILER
    )


def checks_failed(
    store: Store, task_id: str, *, pr_url: str, note: str, data: dict[str, Any]
) -> Task:
    """The task's open pull request's checks failed: back to its agent with `note` (a
    verify retry; `worktree.land = pr`, git/pull_requests.py)."""
    return store.reviews.checks_failed(
        task_id, pr_url=pr_url, note=note, data=data, actor=RECONCILER
    )


def checks_wait(
    store: Store, task_id: str, *, pr_url: str, reason: str, data: dict[str, Any]
) -> Task:
    """The task's open pull request's checks failed past its verify retries: it waits for
    a person with `reason` (the checks and their logs' tails)."""
    return store.reviews.checks_wait(task_id, pr_url=pr_url, reason=reason, data=data,
                                     actor=RECONCILER)  # fmt: skip


def _landed(task: Task, review: Review, repo: Branches, *, full_diff: bool) -> ReviewDetail:
    """The review of a task whose branch corral deleted once it landed: what its landed
    commit brought to the base (none shown when the base lacks the commit)."""
    merged, base = review.merged_commit, review.base_ref
    if merged is None or base is None:
        return ReviewDetail(task=task, review=review, diff_stat=None)
    return ReviewDetail(
        task=task,
        review=review,
        diff_stat=repo.landed_diff(base, merged, stat=True),
        diff=repo.landed_diff(base, merged, stat=False) if full_diff else None,
        landed_commit=merged,
    )


def _head(repo: Branches, task: Task) -> str:
    assert task.branch is not None
    head = repo.head_of(task.branch)
    if head is None:
        raise Refused(
            f"branch {task.branch} of task {task.id} no longer exists (deleted outside corral)"
        )
    return head


def _check_pinned(repo: Branches, task: Task, review: Review) -> None:
    head = _head(repo, task)
    if head != review.approved_commit:
        raise Refused(
            f"branch {task.branch} moved after approval (approved {_short(review.approved_commit)},"
            f" now {_short(head)}): approve task {task.id} again"
        )


def _short(commit: str | None) -> str:
    return (commit or "nothing")[:12]


def pending(store: Store, *, stale_after_s: float) -> list[PendingReview]:
    """Tasks in review or approved, oldest first, each flagged stale past `stale_after_s`."""
    tasks = store.tasks.list_tasks(TaskFilter(statuses=PENDING))
    reviews = store.reviews.reviews_of([t.id for t in tasks])
    now = store.now()
    return [
        PendingReview(
            task=t,
            review=reviews.get(t.id, Review(task_id=t.id)),
            waiting_s=waiting_s(t.updated_at, now),
            stale=is_stale(t.updated_at, now, stale_after_s),
        )
        for t in tasks
    ]


def show(
    store: Store, task_id: str, branches: BranchesFactory, *, full_diff: bool = False
) -> ReviewDetail:
    """Task `task_id`'s review, with the diff stat of its branch (git is opened only then),
    and with `full_diff` the whole patch too."""
    task = store.tasks.get_task(task_id)
    review = store.reviews.get_review(task.id)
    if not task.branch or not review.base_ref:
        return ReviewDetail(task=task, review=review, diff_stat=None)
    repo = branches()
    if repo.head_of(task.branch) is None and (review.branch_deleted or review.merged_commit):
        return _landed(task, review, repo, full_diff=full_diff)
    head = _head(repo, task)
    for _ in range(READS):  # a running agent may commit between the reads: read again
        stat = repo.diff_stat(review.base_ref, task.branch)
        diff = repo.diff(review.base_ref, task.branch) if full_diff else None
        now = _head(repo, task)
        if now == head:  # the diff is the head's
            return ReviewDetail(task=task, review=review, diff_stat=stat, diff=diff, head=head)
        head = now
    moved = f"branch {task.branch} of task {task.id} moved while it was read, {READS} times"
    raise Refused(f"{moved}: show it again")
