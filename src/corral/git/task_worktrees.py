"""A runner's worktrees: each task runs in its own, and leaves it as its outcome says.

enter(task, claim, job) ─► the task's branch brought forward to the backup ref corral
    last wrote of its work, if the branch lacks it ─► plan ─► record the branch in the
    store (under the claim's token, before git creates anything, so the reconciler never
    takes the new worktree for an orphan) ─► git worktree add (or the same path again,
    when it still holds the branch) ─► `worktree.setup` in a new worktree ─► the job, with
    its working directory, CORRAL_WORKTREE_PATH, CORRAL_BRANCH and, after changes were
    requested, CORRAL_REVIEW_NOTE (the note is added to the prompt too)
commit_left(task) ─► after a run that succeeded, with `worktree.commit = auto`: what the
    agent left, committed on the branch (git/run_commit.py)
changed(task) ─► whether the run made a commit (else `worktree.on_empty` decides)
flag_disabled_tests(task) ─► what its commits disable of the tests (a skip marker, a
    deleted test file), flagged on the task (git/disabled_tests.py)
land(task) ─► after a run that succeeded, its branch landed as `worktree.land` says
    (git/land_step.py)
leave(task) ─► kept with --keep-worktrees, while the task is not finished (it runs again,
    waits, or is reviewed: its agent's session resumes only in the same folder), or when
    it is done with its branch kept; otherwise removed (uncommitted work saved as a backup
    ref first), the branch deleted only when it holds nothing the base lacks, and both
    recorded on the task (store: record_cleanup)
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from corral.foundation.errors import CorralError, InvalidInput
from corral.foundation.logs import event
from corral.foundation.policies import WorktreePolicy
from corral.git.disabled_tests import disabled_tests
from corral.git.index_trust import trust_index
from corral.git.land_step import AfterSuccess, TaskLanding
from corral.git.run_commit import commit_left, message_of
from corral.git.worktrees import Worktrees
from corral.model.reviews import Review, WorkOutcome
from corral.model.states import FINAL, TaskStatus
from corral.model.tasks import Task
from corral.store import Store

SETUP_TAIL_CHARS = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class Entered:
    """The worktree a task runs in."""

    path: str
    branch: str
    base_ref: str
    start_commit: str  # the commit the run starts from: a run that ends there changed nothing
    reused: bool = False  # the worktree was there already (its agent's session may resume)
    restored_from: str | None = None  # the backup ref the branch was brought forward to
    changes_note: str | None = None  # what the reviewer asked for, when changes were requested
    rebase_onto: str | None = None  # with require_rebase, after changes were requested

    def env(self) -> dict[str, str]:
        """What the task's command learns of its worktree from its environment."""
        env = {
            "CORRAL_WORKTREE_PATH": self.path,
            "CORRAL_BRANCH": self.branch,
            "CORRAL_BASE_REF": self.base_ref,
        }
        if self.changes_note:
            env["CORRAL_REVIEW_NOTE"] = self.changes_note
        return env


class TaskWorktrees:
    """Worktrees of one runner's tasks, by task id (slots run tasks concurrently)."""

    def __init__(
        self,
        store: Store,
        trees: Worktrees,
        *,
        worker_name: str,
        base_ref: str,
        policy: WorktreePolicy,
        keep: bool = False,
        log: logging.Logger,
    ) -> None:
        try:
            self._setup = tuple(shlex.split(policy.setup))
        except ValueError as exc:
            raise InvalidInput(
                "worktree.setup", "a command with balanced quotes", policy.setup
            ) from exc
        self._landing = TaskLanding(store, trees, policy, log)
        self._store, self._trees, self._worker = store, trees, worker_name
        self._base, self._keep, self._log = base_ref, keep, log
        self._require_rebase = policy.require_rebase
        self._commit_auto, self._author = policy.commit == "auto", policy.author
        self.on_empty = policy.on_empty
        self._entered: dict[str, Entered] = {}
        self._tokens: dict[str, int] = {}
        self._lock = threading.Lock()
        # The site of these worktrees: this host and this clone. A task whose run entered
        # one of them is claimed here while a worker of this site can run it, since its
        # worktree (and its agent's session) is here; see migrations/0027_sites.sql.
        self.site = f"{os.uname().nodename}:{os.path.realpath(trees.root)}"

    def enter(self, task: Task, token: int, worker_id: str) -> Entered:
        """Make (or reuse) the task's worktree; where it is and what it started from."""
        review = self._store.reviews.get_review(task.id)
        base = review.base_ref or self._base
        # With a remote of record, from its base as fetched now (git/remote_base.py).
        remote = self._trees.remote
        start_ref = base if remote is None else remote.start(base, task.branch)
        before = self._trees.git.commit_of(f"refs/heads/{task.branch}") if task.branch else None
        restored = self._restore(task, review)
        plan = self._trees.plan(self._worker, task.id, start_ref, task.branch)
        self._store.reviews.record_branch(
            task.id,
            token=token,
            branch=plan.branch,
            base_ref=base,
            worktree_path=plan.path,
            actor=worker_id,
        )
        start = self._trees.create(plan)
        if not plan.reuse:  # the commit step after the run then reads only what changed
            trust_index(self._trees.git.at(plan.path))
        if restored:  # work brought back from a backup is this run's to land: it never landed
            start = before or self._trees.git.out("rev-parse", start_ref)
        entered = Entered(
            path=plan.path,
            branch=plan.branch,
            base_ref=base,
            start_commit=start,
            reused=plan.reuse,
            restored_from=restored,
            changes_note=review.changes_note,
            rebase_onto=(base if remote is None else remote.shown(base))
            if self._require_rebase and review.changes_note
            else None,
        )
        with self._lock:
            self._entered[task.id], self._tokens[task.id] = entered, token
        event(
            self._log,
            "worktree.entered",
            task_id=task.id,
            path=plan.path,
            branch=plan.branch,
            restored_from=restored,
        )
        if self._setup and not plan.reuse:
            self._run_setup(plan.path)
        return entered

    def _restore(self, task: Task, review: Review) -> str | None:
        """The backup ref corral last wrote of the task's work, when the task's branch was
        brought forward to it (or made again at it): a worktree removed with uncommitted
        work, or a branch deleted, is where the next run starts, not the base. With a
        remote of record, a backup written on another host is fetched from there."""
        if not task.branch or not review.backup_refs:
            return None
        ref = review.backup_refs[-1]
        commit = self._trees.backup_commit(ref)  # with a remote, wherever it was written
        if commit is None or not self._trees.restore(task.branch, commit):
            return None
        event(self._log, "worktree.restored", task_id=task.id, branch=task.branch, backup=ref)
        return ref

    def _run_setup(self, path: str) -> None:
        try:
            proc = subprocess.run(  # noqa: S603 - an argument list from the user's own config
                self._setup, cwd=path, capture_output=True, text=True, check=False
            )
        except OSError as exc:
            raise CorralError(f"worktree setup {self._setup[0]!r} failed: {exc}") from None
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip()[-SETUP_TAIL_CHARS:]
            raise CorralError(
                f"worktree setup `{shlex.join(self._setup)}` exited with status "
                f"{proc.returncode}" + (f": {tail}" if tail else "")
            )

    def _current(self, task_id: str) -> Entered | None:
        with self._lock:
            return self._entered.get(task_id)

    def commit_left(self, task: Task, run_id: str, written: Iterable[str | None]) -> str | None:
        """With `worktree.commit = auto`, commit what the run left in the task's worktree
        (not `written`, the files corral wrote for it); the commit, if one was made.
        CommitFailed (git/run_commit.py) when git refuses."""
        entered = self._current(task.id)
        if entered is None or not self._commit_auto:
            return None
        made = commit_left(
            self._trees.git.at(entered.path),
            message=message_of(task.title, task.id, run_id),
            author=self._author,
            written=written,
        )
        if made is not None:
            event(self._log, "worktree.committed", task_id=task.id, run_id=run_id, commit=made)
        return made

    def changed(self, task_id: str) -> bool:
        """Whether the task's branch moved past the commit the run started from."""
        entered = self._current(task_id)
        return entered is None or self.final_commit(task_id) != entered.start_commit

    def flag_disabled_tests(self, task_id: str) -> None:
        """What the run's commits disable of the tests (git/disabled_tests.py), if anything,
        recorded on the task under its claim. Never raises: a flag that could not be
        recorded is logged, and the run's outcome stands."""
        entered = self._current(task_id)
        with self._lock:
            token = self._tokens.get(task_id)
        if entered is None or token is None:
            return
        try:
            git = self._trees.git.at(entered.path)
            found = disabled_tests(git, entered.start_commit, git.commit_of("HEAD") or "HEAD")
            if found:
                self._store.reviews.record_tests_disabled(
                    task_id, token=token, found=found, actor=f"token:{token}"
                )
        except CorralError as exc:
            event(
                self._log,
                "task.tests_disabled_not_recorded",
                logging.WARNING,
                task_id=task_id,
                error=exc.message,
            )

    def note_outcome(self, task_id: str, outcome: WorkOutcome) -> None:
        """Record where the run's work ended, under its claim; a claim the agent already
        ended itself (`corral done`, `corral submit`, which records in_review) records
        nothing."""
        with self._lock:
            token = self._tokens.get(task_id)
        if token is None:
            return
        try:
            if self._store.tasks.get_task(task_id).status is not TaskStatus.RUNNING:
                return
            self._store.reviews.record_outcome(
                task_id, token=token, outcome=str(outcome), actor=f"token:{token}"
            )
        except CorralError as exc:
            event(
                self._log,
                "task.outcome_not_recorded",
                logging.WARNING,
                task_id=task_id,
                outcome=str(outcome),
                error=exc.message,
            )

    def final_commit(self, task_id: str) -> str | None:
        """The head of the task's worktree now, if it has one."""
        entered = self._current(task_id)
        if entered is None:
            return None
        return self._trees.git.at(entered.path).commit_of("HEAD")

    def catch_up(self, task: Task) -> str | None:
        """Before a land's verify step, the base merged into the branch (git/catch_up.py);
        the base commit it now holds, or None."""
        with self._lock:
            entered = self._entered.get(task.id)
        return None if entered is None else self._landing.catch_up(task, entered)

    def land(
        self, task: Task, token: int, head: str | None, *, onto: str | None = None
    ) -> AfterSuccess:
        """Land the task's branch after a run that succeeded (with `onto`, only onto that
        base commit); the error failing it, if any, or `moved`."""
        entered = self._current(task.id)
        if entered is None:
            return AfterSuccess()
        after = self._landing.after_success(task, token, entered, head, onto)
        if after.outcome is not None:
            self.note_outcome(task.id, after.outcome)
        return after

    def leave(self, task_id: str, token: int) -> None:
        """Remove the task's worktree unless kept; never raises (the task's outcome stands).

        Only the run of claim `token` leaves: its report made the task ready, so another
        slot may have claimed and entered it again before this one got here, and that
        run's worktree is not this one's to forget or remove."""
        with self._lock:
            if self._tokens.get(task_id) != token:
                return
            entered = self._entered.pop(task_id)
            del self._tokens[task_id]
        if self._keep:
            return
        try:
            if self._keeps(task_id):
                return
            backup = self._trees.remove(entered.path)
            deleted = self._trees.is_merged(entered.branch, entered.base_ref)
            if deleted:
                self._trees.delete_branch(entered.branch, entered.base_ref)
            self._store.reviews.record_cleanup(
                task_id,
                token=token,
                backups=(backup,) if backup else (),
                branch_deleted=deleted,
                actor=self._worker,
            )
            event(
                self._log,
                "worktree.removed",
                task_id=task_id,
                path=entered.path,
                backup=backup,
                branch_deleted=deleted,
            )
        except CorralError as exc:
            event(
                self._log,
                "worktree.cleanup_failed",
                logging.WARNING,
                task_id=task_id,
                error=exc.message,
            )

    def _keeps(self, task_id: str) -> bool:
        """Whether the task's worktree stays: the task is not finished (it runs again,
        waits for a person or is reviewed), or it is done with its branch kept."""
        status = self._store.tasks.get_task(task_id).status
        if status not in FINAL:
            return True
        if status is not TaskStatus.DONE:
            return False
        return self._store.reviews.get_review(task_id).outcome is WorkOutcome.KEPT
