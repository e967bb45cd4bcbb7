"""A runner's worktrees: each task runs in its own, and leaves it as its outcome says.

enter(task, claim, job) ─► plan ─► record the branch in the store (under the claim's
    token, before git creates anything, so the reconciler never takes the new worktree
    for an orphan) ─► git worktree add ─► `worktree.setup` in a new worktree ─► the job,
    with its working directory, CORRAL_WORKTREE_PATH, CORRAL_BRANCH and, after changes
    were requested, CORRAL_REVIEW_NOTE (the note is added to the prompt too)
land(task) ─► after a run that succeeded, its branch landed as `worktree.land` says
    (git/task_landing.py)
leave(task) ─► kept with --keep-worktrees or while the task is in review or approved (or,
    for an agent that resumes its sessions, while it will run again);
    otherwise removed (uncommitted work saved as a backup ref first), and the branch
    deleted only when it holds nothing the base lacks (a kept or conflicting branch stays)
"""

from __future__ import annotations

import logging
import shlex
import subprocess
import threading
from dataclasses import dataclass

from corral.errors import CorralError, InvalidInput
from corral.git.index_trust import trust_index
from corral.git.task_landing import TaskLanding
from corral.git.worktrees import Worktrees
from corral.logs import event
from corral.model.states import TaskStatus
from corral.model.tasks import Task
from corral.policies import WorktreePolicy
from corral.store import Store

KEPT_FOR_REVIEW = frozenset({TaskStatus.IN_REVIEW, TaskStatus.APPROVED})
WILL_RUN_AGAIN = frozenset({TaskStatus.READY, TaskStatus.BLOCKED, TaskStatus.RUNNING})
SETUP_TAIL_CHARS = 500


@dataclass(frozen=True, slots=True, kw_only=True)
class Entered:
    """The worktree a task runs in."""

    path: str
    branch: str
    base_ref: str
    base_commit: str
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
        keep_unfinished: bool = False,
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
        # An agent that resumes its session needs the same folder again: a task that will
        # run again keeps its worktree (and the work left in it).
        self._kept = KEPT_FOR_REVIEW | (WILL_RUN_AGAIN if keep_unfinished else frozenset())
        self._entered: dict[str, Entered] = {}
        self._lock = threading.Lock()

    def enter(self, task: Task, token: int, worker_id: str) -> Entered:
        """Make (or reuse) the task's worktree; where it is and what it started from."""
        review = self._store.get_review(task.id)
        base = review.base_ref or self._base
        # With a remote of record, from its base as fetched now (git/remote_base.py).
        remote = self._trees.remote
        start = base if remote is None else remote.start(base, task.branch)
        plan = self._trees.plan(self._worker, task.id, start, task.branch)
        self._store.record_branch(
            task.id,
            token=token,
            branch=plan.branch,
            base_ref=base,
            worktree_path=plan.path,
            actor=worker_id,
        )
        self._trees.create(plan)
        if not plan.reuse:  # the commit step after the run then reads only what changed
            trust_index(self._trees.git.at(plan.path))
        entered = Entered(
            path=plan.path,
            branch=plan.branch,
            base_ref=base,
            base_commit=self._trees.git.out("rev-parse", start),
            changes_note=review.changes_note,
            rebase_onto=(base if remote is None else remote.shown(base))
            if self._require_rebase and review.changes_note
            else None,
        )
        with self._lock:
            self._entered[task.id] = entered
        event(self._log, "worktree.entered", task_id=task.id, path=plan.path, branch=plan.branch)
        if self._setup and not plan.reuse:
            self._run_setup(plan.path)
        return entered

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

    def final_commit(self, task_id: str) -> str | None:
        """The head of the task's worktree now, if it has one."""
        with self._lock:
            entered = self._entered.get(task_id)
        if entered is None:
            return None
        return self._trees.git.at(entered.path).commit_of("HEAD")

    def catch_up(self, task: Task) -> None:
        """Before a land's verify step, the base merged into the branch (git/catch_up.py)."""
        with self._lock:
            entered = self._entered.get(task.id)
        if entered is not None:
            self._landing.catch_up(task, entered)

    def land(self, task: Task, token: int, head: str | None) -> str | None:
        """Land the task's branch after a run that succeeded; the error failing it, if any."""
        with self._lock:
            entered = self._entered.get(task.id)
        if entered is None:
            return None
        return self._landing.after_success(task, token, entered, head)

    def leave(self, task_id: str) -> None:
        """Remove the task's worktree unless kept; never raises (the task's outcome stands)."""
        with self._lock:
            entered = self._entered.pop(task_id, None)
        if entered is None or self._keep:
            return
        try:
            status = self._store.get_task(task_id).status
            if status in self._kept:
                return
            backup = self._trees.remove(entered.path)
            deleted = self._trees.is_merged(entered.branch, entered.base_ref)
            if deleted:
                self._trees.delete_branch(entered.branch, entered.base_ref)
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
