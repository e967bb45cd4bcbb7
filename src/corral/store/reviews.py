"""Store operations of the review flow: record a branch, submit, approve, request changes,
merge, merge conflict, a pull request merged or closed; and of landing: record a landing,
a land conflict.

Each is one write transaction: a compare-and-set on the task's status (from
`ALLOWED_FROM`), the review row saved whole, and one event. Merge and merge conflict are
also guarded by the approved commit, so a re-approval between the git merge and its
recording is caught rather than recorded over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from corral.foundation import errors
from corral.foundation.records import replace
from corral.model.states import ALLOWED_FROM, ClaimStatus, TaskStatus
from corral.store import journal, rows
from corral.store.claims import end_claim
from corral.store.driver import Driver, Json, Tx
from corral.store.lookups import held_claim, read_task, task_in
from corral.store.operations import OPERATOR, VIEWER, WORKER, Repository, served
from corral.store.task_endings import unblock_dependents

if TYPE_CHECKING:  # imported where built: every CLI command imports the store, few reviews
    from datetime import datetime

    from corral.model.claims import Claim
    from corral.model.reviews import Review, WorkEnd, WorkEnds
    from corral.model.tasks import Task


class Reviews(Repository):
    """The review flow's state changes and reads."""

    NAME = "reviews"

    @served(WORKER, owns="token", frees_work=False)
    def record_branch(
        self,
        task_id: str,
        *,
        token: int | None,
        branch: str,
        base_ref: str,
        worktree_path: str,
        actor: str,
    ) -> None:
        """Note the branch and worktree a claim works in, under the claim's token."""
        with self._driver.write() as tx:
            claim = held_claim(
                tx, self._driver, task_id, action="record a branch for", token=token, worker_id=None
            )
            tx.run("set_task_branch", task_id=task_id, branch=branch)
            review = _review_in(tx, self._driver, task_id)
            _save(tx, replace(review, base_ref=base_ref, worktree_path=worktree_path))
            journal.record(
                tx,
                "task.branch_recorded",
                actor=actor,
                task_id=task_id,
                worker_id=claim.worker_id,
                token=claim.token,
                data={"branch": branch, "base_ref": base_ref, "worktree_path": worktree_path},
            )

    @served(WORKER, owns="token")
    def submit(
        self, task_id: str, *, token: int | None, note: str | None, pr_url: str | None, actor: str
    ) -> Task:
        """Hand a running task in for review: its claim ends, the task is in_review."""
        with self._driver.write() as tx:
            claim = held_claim(
                tx, self._driver, task_id, action="submit", token=token, worker_id=None
            )
            end_claim(tx, claim.token, claim.worker_id, ClaimStatus.COMPLETED, completed=1)
            # Handed in under the run's token: its run records it, however its runner ends.
            tx.send("note_reported", holder=claim.worker_id, token=claim.token, reported="done")
            self._step(
                tx,
                Step(
                    task_id=task_id,
                    action="submit",
                    to=TaskStatus.IN_REVIEW,
                    event="task.submitted",
                ),
                {
                    "note": note,
                    "pr_url": pr_url,
                    "pr_state": None,
                    "conflict_files": None,
                    "outcome": "in_review",
                },
                actor=actor,
                claim=claim,
                reason=note,
                data={"pr_url": pr_url},
            )
        return read_task(self._driver, task_id)

    @served(OPERATOR)
    def approve(self, task_id: str, *, commit: str | None, note: str | None, actor: str) -> Task:
        """in_review -> approved, pinning `commit` (the branch's head the reviewer saw)."""
        with self._driver.write() as tx:
            self._step(
                tx,
                Step(
                    task_id=task_id, action="approve", to=TaskStatus.APPROVED, event="task.approved"
                ),
                {"approved_commit": commit, "approve_note": note},
                actor=actor,
                reason=note,
                data={"commit": commit},
            )
        return read_task(self._driver, task_id)

    @served(OPERATOR)
    def request_changes(self, task_id: str, *, note: str, actor: str) -> Task:
        """in_review or approved -> ready on the same branch; `note` goes to the next run."""
        step = Step(
            task_id=task_id,
            action="request_changes",
            to=TaskStatus.READY,
            event="task.changes_requested",
        )
        with self._driver.write() as tx:
            self._step(
                tx, step, {"changes_note": note, "approved_commit": None}, actor=actor, reason=note
            )
        return read_task(self._driver, task_id)

    @served(OPERATOR)
    def finish_merge(
        self, task_id: str, *, approved_commit: str | None, merged_commit: str | None, actor: str
    ) -> Task:
        """approved -> done once the branch is merged; unblocks dependents."""
        step = Step(task_id=task_id, action="merge", to=TaskStatus.DONE, event="task.merged")
        with self._driver.write() as tx:
            _check_approved_at(tx, self._driver, task_id, approved_commit)
            self._step(
                tx,
                step,
                {
                    "merged_commit": merged_commit,
                    "conflict_files": None,
                    "outcome": "landed" if merged_commit else None,
                },
                actor=actor,
                data={"commit": approved_commit, "merged_commit": merged_commit},
            )
            journal.record_all(tx, unblock_dependents(tx, [task_id], actor))
        return read_task(self._driver, task_id)

    @served(OPERATOR)
    def settle_pull_request(
        self, task_id: str, *, pr_url: str, merged_commit: str | None, actor: str
    ) -> Task:
        """The task's open pull request `pr_url` merged at `merged_commit` (in_review or
        approved -> done, dependents unblocked), or, with None, closed unmerged (the task
        stays in review, for a person; the pull request recorded closed). Refused, changing
        nothing, when the review no longer names that pull request as open."""
        from corral.model.reviews import PullRequestState

        with self._driver.write() as tx:
            review = _review_in(tx, self._driver, task_id)
            if review.pr_url != pr_url or review.pr_state not in (None, PullRequestState.OPEN):
                raise errors.Refused(f"task {task_id} has no open pull request {pr_url}")
            data = {"pr_url": pr_url, "merged_commit": merged_commit}
            if merged_commit is not None:
                step = Step(
                    task_id=task_id, action="merge_pr", to=TaskStatus.DONE, event="task.pr_merged"
                )
                changes = {
                    "merged_commit": merged_commit,
                    "pr_state": PullRequestState.MERGED,
                    "conflict_files": None,
                    "outcome": "landed",
                }
                self._step(tx, step, changes, actor=actor, data=data)
                journal.record_all(tx, unblock_dependents(tx, [task_id], actor))
            else:
                _close_pull_request(tx, self._driver, review, actor=actor, data=data)
        return read_task(self._driver, task_id)

    @served(OPERATOR)
    def checks_failed(
        self, task_id: str, *, pr_url: str, note: str, data: dict[str, Any], actor: str
    ) -> Task:
        """The checks of the task's open pull request `pr_url` failed, and its agent is to
        fix them: in_review or approved -> ready on the same branch, `note` for its next
        run, no attempt spent (event `task.checks_failed` with `data`: the checks, the
        retry). Refused, changing nothing, when the review no longer names that pull
        request as open or the task moved on."""
        step = Step(
            task_id=task_id, action="checks_failed", to=TaskStatus.READY, event="task.checks_failed"
        )
        with self._driver.write() as tx:
            _check_open_pull_request(tx, self._driver, task_id, pr_url)
            changes = {"changes_note": note, "approved_commit": None}
            reason = note.partition("\n")[0]
            self._step(tx, step, changes, actor=actor, reason=reason, data=data)
        return read_task(self._driver, task_id)

    @served(OPERATOR)
    def checks_wait(
        self, task_id: str, *, pr_url: str, reason: str, data: dict[str, Any], actor: str
    ) -> Task:
        """The checks of the task's open pull request `pr_url` failed past its retries: in
        review or approved -> waiting for a person with `reason` (event `task.waiting`).
        Refused as `checks_failed` is."""
        with self._driver.write() as tx:
            _check_open_pull_request(tx, self._driver, task_id, pr_url)
            before = task_in(tx, self._driver, task_id)
            if not tx.run(
                "review_wait_task",
                task_id=task_id,
                reason=reason,
                allowed=ALLOWED_FROM["checks_failed"],
            ):
                raise errors.InvalidTransition(task_id, "wait on the checks of", before.status)
            journal.record(
                tx,
                "task.waiting",
                actor=actor,
                task_id=task_id,
                from_status=before.status,
                to_status=TaskStatus.WAITING,
                reason=reason,
                data=data,
            )
        return read_task(self._driver, task_id)

    @served(OPERATOR)
    def merge_conflict(
        self, task_id: str, *, approved_commit: str | None, files: tuple[str, ...], actor: str
    ) -> Task:
        """approved -> ready with the conflicting files recorded, on the same branch."""
        reason = "merge conflict in " + ", ".join(files)
        step = Step(
            task_id=task_id, action="merge", to=TaskStatus.READY, event="task.merge_conflict"
        )
        changes = {"conflict_files": files, "changes_note": reason, "approved_commit": None}
        with self._driver.write() as tx:
            _check_approved_at(tx, self._driver, task_id, approved_commit)
            self._step(tx, step, changes, actor=actor, reason=reason, data={"files": list(files)})
        return read_task(self._driver, task_id)

    @served(WORKER, owns="token")
    def record_landing(
        self,
        task_id: str,
        *,
        token: int | None,
        branch: str,
        base_ref: str,
        merged_commit: str,
        actor: str,
    ) -> None:
        """Note that the task's branch is on its base at `merged_commit`: under the claim's
        token while its runner holds it, or once the task is done (`corral land`)."""
        from corral.model.reviews import WorkOutcome

        with self._driver.write() as tx:
            claim = self._landing_claim(tx, task_id, token)
            _save(
                tx,
                replace(
                    _review_in(tx, self._driver, task_id),
                    base_ref=base_ref,
                    merged_commit=merged_commit,
                    conflict_files=None,
                    outcome=WorkOutcome.LANDED,
                ),
                stamp=True,
            )
            journal.record(
                tx,
                "task.landed",
                actor=actor,
                task_id=task_id,
                worker_id=None if claim is None else claim.worker_id,
                token=token,
                data={"branch": branch, "base_ref": base_ref, "merged_commit": merged_commit},
            )

    @served(WORKER, owns="token")
    def record_outcome(self, task_id: str, *, token: int, outcome: str, actor: str) -> None:
        """Note where the work of the run holding claim `token` ended (model.reviews'
        WorkOutcome: kept, no_change, refused ...), under that claim."""
        from corral.model.reviews import WorkOutcome

        ended = WorkOutcome(outcome)
        with self._driver.write() as tx:
            claim = held_claim(
                tx, self._driver, task_id, action="record the outcome of", token=token,
                worker_id=None,
            )  # fmt: skip
            _save(tx, replace(_review_in(tx, self._driver, task_id), outcome=ended), stamp=True)
            journal.record(
                tx,
                "task.outcome",
                actor=actor,
                task_id=task_id,
                worker_id=claim.worker_id,
                token=token,
                data={"outcome": str(ended)},
            )

    @served(WORKER, owns="token")
    def record_tests_disabled(
        self, task_id: str, *, token: int, found: tuple[str, ...], actor: str
    ) -> None:
        """Flag the task: the run holding claim `token` disabled tests, as `found` says
        (git/disabled_tests.py), under that claim; event `task.tests_disabled`."""
        with self._driver.write() as tx:
            claim = held_claim(
                tx, self._driver, task_id, action="flag disabled tests of", token=token,
                worker_id=None,
            )  # fmt: skip
            review = _review_in(tx, self._driver, task_id)
            _save(tx, replace(review, tests_disabled=tuple(found)))
            journal.record(
                tx,
                "task.tests_disabled",
                actor=actor,
                task_id=task_id,
                worker_id=claim.worker_id,
                token=token,
                data={"found": list(found)},
            )

    @served(WORKER, owns="token")
    def record_cleanup(
        self,
        task_id: str,
        *,
        token: int | None,
        backups: tuple[str, ...],
        branch_deleted: bool,
        actor: str,
    ) -> None:
        """Note what corral's own clean-up did to the task's work: the backup refs it wrote
        (appended) and whether it deleted the branch. Not fenced: it records what git did
        after the claim ended; `token`, the claim the runner held, only says (over HTTP)
        whose task it is. Nothing to note records nothing."""
        if not backups and not branch_deleted:
            return
        with self._driver.write() as tx:
            task_in(tx, self._driver, task_id)
            claimed = None if token is None else tx.one("claim_by_token", token=token)
            if token is not None and (claimed is None or claimed["task_id"] != task_id):
                raise errors.Refused(f"claim {token} is not a claim of task {task_id}")
            review = _review_in(tx, self._driver, task_id)
            refs = review.backup_refs + tuple(b for b in backups if b not in review.backup_refs)
            deleted = review.branch_deleted or branch_deleted
            _save(tx, replace(review, backup_refs=refs, branch_deleted=deleted))
            journal.record(
                tx,
                "task.branch_cleaned_up",
                actor=actor,
                task_id=task_id,
                token=token,
                data={"backups": list(backups), "branch_deleted": branch_deleted},
            )

    @served(WORKER, owns="token")
    def land_conflict(
        self, task_id: str, *, token: int | None, files: tuple[str, ...], note: str, actor: str
    ) -> Task:
        """A land that conflicts: the files, and `note` for the next run, recorded.

        Under the claim's token the task stays running (its run then fails as any failed run
        does, so the retry policy bounds the rounds); a done task goes back to ready on the
        same branch, as after a review merge conflict.
        """
        reason = "land conflict in " + ", ".join(files)
        changes: dict[str, Any] = {"conflict_files": files, "changes_note": note}
        if token is None:
            step = Step(
                task_id=task_id, action="land", to=TaskStatus.READY, event="task.land_conflict"
            )
            with self._driver.write() as tx:
                self._step(
                    tx, step, changes, actor=actor, reason=reason, data={"files": list(files)}
                )
            return read_task(self._driver, task_id)
        with self._driver.write() as tx:
            claim = self._landing_claim(tx, task_id, token)
            _save(tx, replace(_review_in(tx, self._driver, task_id), **changes))
            journal.record(
                tx,
                "task.land_conflict",
                actor=actor,
                task_id=task_id,
                worker_id=None if claim is None else claim.worker_id,
                token=token,
                reason=reason,
                data={"files": list(files)},
            )
        return read_task(self._driver, task_id)

    def _landing_claim(self, tx: Tx, task_id: str, token: int | None) -> Claim | None:
        """The claim a runner lands under (refused when no longer held), or None for a done
        task (refused when it is not done)."""
        if token is not None:
            return held_claim(tx, self._driver, task_id, action="land", token=token, worker_id=None)
        task = task_in(tx, self._driver, task_id)
        if task.status is not TaskStatus.DONE:
            raise errors.InvalidTransition(task_id, "land", task.status)
        return None

    @served(VIEWER)
    def get_review(self, task_id: str) -> Review:
        """The review record of task `task_id` (empty when nothing was recorded); NotFound."""
        with self._driver.read() as tx:
            task_in(tx, self._driver, task_id)
            return _review_in(tx, self._driver, task_id)

    @served(VIEWER)
    def branched_tasks(self) -> list[Task]:
        """Every task with a branch recorded, oldest first (`corral branches`)."""
        with self._driver.read() as tx:
            return [rows.task(self._driver, r) for r in tx.all("branched_tasks")]

    @served(VIEWER)
    def work_ends(self, *, since: datetime, limit: int) -> WorkEnds:
        """Where tasks' work ended: counts by outcome since `since`, and at most `limit`
        kept (oldest first) and landed (newest first); bounded reads (queries.sql)."""
        from corral.model.reviews import WorkEnds

        with self._driver.read() as tx:
            counts = {r["outcome"]: int(r["n"]) for r in tx.all("work_counts_since", since=since)}
            kept = tx.all("oldest_kept", limit=limit)
            landed = tx.all("newest_landed", limit=limit)
        return WorkEnds(
            since=since,
            counts=counts,
            kept=tuple(_work_end(self._driver, r, branch=r["branch"]) for r in kept),
            landed=tuple(_work_end(self._driver, r, commit=r["merged_commit"]) for r in landed),
        )

    @served(VIEWER)
    def reviews_of(self, task_ids: list[str]) -> dict[str, Review]:
        """Review records of the given tasks that have one, by task id."""
        with self._driver.read() as tx:
            found = tx.all("reviews_of", ids=task_ids)
            return {r["task_id"]: rows.review(self._driver, r) for r in found}

    def _step(
        self,
        tx: Tx,
        step: Step,
        changes: dict[str, Any],
        *,
        actor: str,
        claim: Claim | None = None,
        reason: str | None = None,
        data: dict[str, Any] | None = None,
    ) -> None:
        """Compare-and-set the task's status, save the review with `changes`, record the event.

        Back to ready is `reopen_task` (a fresh attempt budget, the reason kept as the last
        error); the steps forward are `move_reviewed_task`.
        """
        before = task_in(tx, self._driver, step.task_id)
        if step.to is TaskStatus.READY:
            moved = tx.run(
                "reopen_task",
                task_id=step.task_id,
                reason=reason,
                allowed=ALLOWED_FROM[step.action],
            )
        else:
            moved = tx.run(
                "move_reviewed_task",
                task_id=step.task_id,
                to_status=step.to,
                allowed=ALLOWED_FROM[step.action],
            )
        if not moved:
            raise errors.InvalidTransition(
                step.task_id, step.action.replace("_", " "), before.status
            )
        if step.to is TaskStatus.READY:
            tx.run("clear_stale_mark", task_id=step.task_id)
        _save(
            tx,
            replace(_review_in(tx, self._driver, step.task_id), **changes),
            stamp="outcome" in changes,
        )
        journal.record(
            tx,
            step.event,
            actor=actor,
            task_id=step.task_id,
            worker_id=None if claim is None else claim.worker_id,
            token=None if claim is None else claim.token,
            from_status=before.status,
            to_status=step.to,
            reason=reason,
            data=data,
        )


class Step(NamedTuple):
    """One move of the review flow: the action whose start states apply, where it goes, and
    the event that records it.

    A NamedTuple, not a frozen dataclass: every command imports the store, and building a
    dataclass costs five times as much at import (bench/cli_latency.py).
    """

    task_id: str
    action: str
    to: TaskStatus
    event: str


def _check_approved_at(tx: Tx, driver: Driver, task_id: str, commit: str | None) -> None:
    """Refuse unless the task is approved at `commit` (a re-approval since would differ)."""
    task = task_in(tx, driver, task_id)
    if task.status is not TaskStatus.APPROVED:
        raise errors.InvalidTransition(task_id, "merge", task.status)
    review = _review_in(tx, driver, task_id)
    if review.approved_commit != commit:
        raise errors.Refused(
            f"task {task_id} was approved again meanwhile (at {review.approved_commit})"
        )


def _check_open_pull_request(tx: Tx, driver: Driver, task_id: str, pr_url: str) -> None:
    """Refused unless the task's review names `pr_url` as its open pull request."""
    from corral.model.reviews import PullRequestState

    review = _review_in(tx, driver, task_id)
    if review.pr_url != pr_url or review.pr_state not in (None, PullRequestState.OPEN):
        raise errors.Refused(f"task {task_id} has no open pull request {pr_url}")


def _close_pull_request(
    tx: Tx, driver: Driver, review: Review, *, actor: str, data: dict[str, Any]
) -> None:
    """Record the task's pull request closed unmerged; the task stays in review."""
    from corral.model.reviews import PullRequestState

    task = task_in(tx, driver, review.task_id)
    if task.status not in ALLOWED_FROM["merge_pr"]:
        raise errors.InvalidTransition(review.task_id, "close the pull request of", task.status)
    _save(tx, replace(review, pr_state=PullRequestState.CLOSED))
    journal.record(
        tx,
        "task.pr_closed",
        actor=actor,
        task_id=review.task_id,
        reason=f"pull request {review.pr_url} closed unmerged",
        data=data,
    )


def _work_end(driver: Driver, row: Any, **found: str | None) -> WorkEnd:
    from corral.model.reviews import WorkEnd

    at = row["outcome_at"]
    return WorkEnd(
        task_id=row["id"],
        title=row["title"],
        ended_at=None if at is None else driver.instant(at),
        pr_url=row["pr_url"],
        **found,
    )


def _review_in(tx: Tx, driver: Driver, task_id: str) -> Review:
    from corral.model.reviews import Review

    row = tx.one("get_review", task_id=task_id)
    return Review(task_id=task_id) if row is None else rows.review(driver, row)


def _save(tx: Tx, review: Review, *, stamp: bool = False) -> None:
    """Write the review row whole; with `stamp`, its outcome was recorded now."""
    fields: dict[str, Any] = review.to_dict()
    fields["stamp"] = stamp and review.outcome is not None
    files = fields["conflict_files"]
    fields["conflict_files"] = None if files is None else Json(files)
    fields["backup_refs"] = Json(fields["backup_refs"]) if fields["backup_refs"] else None
    disabled = fields["tests_disabled"]
    fields["tests_disabled"] = Json(disabled) if disabled else None
    tx.run("save_review", task_id=review.task_id, **fields)
