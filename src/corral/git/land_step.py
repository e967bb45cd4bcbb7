"""What a runner does with a task's branch after a run that succeeded (`worktree.land`).

    run succeeded ─► no commit since the run started ─► nothing (worktree.on_empty decides)
                  ─► review required ─► nothing (the review flow), noted in_review
                  ─► land = keep     ─► the branch stays, noted kept: `corral branches`
                  ─► land = merge    ─► under the merge lock: merged onto the base and
                                        recorded (the branch then goes with the worktree;
                                        after a verify step, only onto the base commit
                                        it saw, else `moved`: verified again first),
                                        or a conflict: the files and a note for the next run
                                        recorded, the branch noted kept (and pushed to a
                                        remote of record), and the run fails
                  ─► land = command  ─► the user's command, in the worktree, told the branch,
                                        base and task; a non-zero exit fails the run
                  ─► land = pr       ─► the branch pushed to the remote, a pull request
                                        opened (git/pull_requests.py; the task's own,
                                        updated or reopened, when it runs again after
                                        changes were requested), the task submitted for
                                        review with its URL; a failure fails the run

It runs before the run is reported, while the claim is held: the task is done only once
its work is on the base, so its dependents start from a base that has it. A merge git
refuses outright (the base's checkout has uncommitted changes, a fast-forward that is
not one) keeps the branch, with a warning in the worker's log: the work stays visible in
`corral branches` for `corral land`, rather than failing every task while someone edits
the checkout. With a remote of record (`[worktree] remote`), a branch that stays (in
review, kept, a land refused) is pushed there, so any host can review or land it.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from typing import TYPE_CHECKING, NamedTuple

from corral.foundation.errors import CorralError, InvalidInput, Refused
from corral.foundation.logs import event
from corral.git.catch_up import merge_base_in
from corral.git.merging import GitBranches
from corral.git.pull_requests import PullRequests
from corral.model.reviews import MergeStrategy, WorkOutcome
from corral.model.states import TaskStatus
from corral.usecases import landings, reviews

if TYPE_CHECKING:
    from corral.foundation.policies import WorktreePolicy
    from corral.git.task_worktrees import Entered
    from corral.git.worktrees import Worktrees
    from corral.model.tasks import Task
    from corral.store import Store

# A land command (say, one that pushes and opens a pull request) that has not finished in
# this long is stuck; its run fails rather than holding the worker's slot for ever.
LAND_COMMAND_TIMEOUT_S = 600.0
OUTPUT_TAIL_CHARS = 500


class AfterSuccess(NamedTuple):
    """What landing a run's branch did: the error that fails the run, and where the work
    ended when the runner is to record it (a land records `landed` itself); `moved`: not
    landed, because the base moved off the commit the verify step saw."""

    error: str | None = None
    outcome: WorkOutcome | None = None
    moved: bool = False


class TaskLanding:
    """One runner's landing of its tasks' branches, as `worktree.land` says."""

    def __init__(
        self, store: Store, trees: Worktrees, policy: WorktreePolicy, log: logging.Logger
    ) -> None:
        try:
            self._command = tuple(shlex.split(policy.land_command))
        except ValueError:
            raise InvalidInput(
                "worktree.land_command", "a command with balanced quotes", policy.land_command
            ) from None
        # The runner lands the branch it has: no fetch of the remote's copy (merging.py).
        self._store, self._repo, self._log = store, GitBranches(trees, local_branches=True), log
        self._remote = trees.remote
        self._prs = PullRequests(policy) if policy.land == "pr" else None
        self._trees = trees
        self._mode, self._strategy = policy.land, MergeStrategy(policy.merge_strategy)

    def after_success(
        self, task: Task, token: int, entered: Entered, head: str | None, onto: str | None
    ) -> AfterSuccess:
        """Land the branch of a run that succeeded (with `onto`, only onto that base
        commit): what it did."""
        if head is None or head == entered.start_commit:
            return AfterSuccess()
        if task.requires_review or self._mode == "keep":
            return self._stays(task, entered)
        if self._mode == "command":
            return AfterSuccess(error=self._run_command(task, entered))
        if self._prs is not None:
            return AfterSuccess(error=self._open_pull_request(self._prs, task, token, entered))
        return self._merge(task, token, entered, onto)

    def _stays(self, task: Task, entered: Entered) -> AfterSuccess:
        """A branch that stays, for its review or kept: pushed to a remote of record."""
        error = self._publish(task, entered)
        if error is not None:
            return AfterSuccess(error=error)
        if task.requires_review:
            return AfterSuccess(outcome=WorkOutcome.IN_REVIEW)
        event(self._log, "task.branch_kept", task_id=task.id, branch=entered.branch)
        return AfterSuccess(outcome=WorkOutcome.KEPT)

    def catch_up(self, task: Task, entered: Entered) -> str | None:
        """Before the verify step of a run whose branch will land (`land = merge`, no
        review): the base of record merged into the branch (git/catch_up.py); the base
        commit the branch now holds, for the land to be built onto, or None."""
        if self._mode != "merge" or task.requires_review:
            return None
        try:
            return merge_base_in(self._trees, entered.path, entered.base_ref)
        except CorralError as exc:  # the step then checks the branch as its agent left it
            event(
                self._log,
                "task.catch_up_failed",
                logging.WARNING,
                task_id=task.id,
                error=exc.message,
            )
            return None

    def _open_pull_request(
        self, prs: PullRequests, task: Task, token: int, entered: Entered
    ) -> str | None:
        """Push the branch, open its pull request, submit the task for review with its URL."""
        error = self._publish(task, entered)
        if error is not None:
            return error
        if self._store.tasks.get_task(task.id).status is not TaskStatus.RUNNING:
            return None  # submitted for review by its agent, or no longer ours
        env = {**os.environ, **entered.env(), "CORRAL_TASK_ID": task.id}
        try:
            pr = prs.for_run(
                task,
                self._store.reviews.get_review(task.id),
                branch=entered.branch,
                base=entered.base_ref,
                cwd=entered.path,
                env=env,
            )
            reviews.submit(self._store, task.id, token=token, pr_url=pr.url)
        except CorralError as exc:
            return f"pull request: {exc.message}"
        if pr.reopen_refused is not None:
            event(self._log, "task.pr_reopen_refused", logging.WARNING, task_id=task.id,
                  error=pr.reopen_refused)  # fmt: skip
        event(self._log, f"task.pr_{pr.how}", task_id=task.id, branch=entered.branch, url=pr.url)
        return None

    def _merge(self, task: Task, token: int, entered: Entered, onto: str | None) -> AfterSuccess:
        with self._repo.locked():
            now = self._store.tasks.get_task(task.id)
            if now.status is TaskStatus.DONE:  # the agent ran `corral done` itself
                token_or_none = None
            elif now.status is TaskStatus.RUNNING:
                token_or_none = token
            else:  # submitted for review by its agent, or no longer ours: not to land
                self._publish(task, entered)
                return AfterSuccess()
            try:
                landed = landings.land(
                    self._store,
                    now,
                    repo=self._repo,
                    base=entered.base_ref,
                    strategy=self._strategy,
                    token=token_or_none,
                    actor=f"token:{token}",
                    onto=onto,
                )
            except Refused as exc:
                event(
                    self._log,
                    "task.land_refused",
                    logging.WARNING,
                    task_id=task.id,
                    branch=entered.branch,
                    reason=exc.message,
                )
                self._publish(task, entered)
                return AfterSuccess(outcome=WorkOutcome.KEPT)
        if landed.moved:
            return AfterSuccess(moved=True)
        if landed.conflicts:  # the run fails; its branch is work that needs merging: kept
            files = ", ".join(landed.conflicts)
            self._publish(task, entered)
            return AfterSuccess(
                outcome=WorkOutcome.KEPT,
                error=f"land conflict with {entered.base_ref} in {files}",
            )
        event(
            self._log,
            "task.landed",
            task_id=task.id,
            branch=entered.branch,
            base=entered.base_ref,
            commit=landed.merged_commit,
        )
        return AfterSuccess()

    def _publish(self, task: Task, entered: Entered) -> str | None:
        """With a remote of record, push the branch that stays (in review, kept) so every
        host can show, approve, merge or land it; the error that fails the run, if any."""
        if self._remote is None:
            return None
        try:
            commit = self._remote.publish(entered.branch)
        except CorralError as exc:
            return exc.message
        event(
            self._log,
            "task.branch_published",
            task_id=task.id,
            branch=entered.branch,
            remote=self._remote.name,
            commit=commit,
        )
        return None

    def _run_command(self, task: Task, entered: Entered) -> str | None:
        env = {
            **os.environ,
            **entered.env(),
            "CORRAL_TASK_ID": task.id,
            "CORRAL_TASK_TITLE": task.title,
        }
        try:
            # S603: the user's own configured command, as an argument list.
            proc = subprocess.run(  # noqa: S603
                self._command,
                cwd=entered.path,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=LAND_COMMAND_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"land command {self._command[0]!r} failed: {exc}"
        if proc.returncode == 0:
            event(self._log, "task.land_command", task_id=task.id, branch=entered.branch)
            return None
        tail = (proc.stderr or proc.stdout).strip()[-OUTPUT_TAIL_CHARS:]
        return f"land command exited with status {proc.returncode}" + (f": {tail}" if tail else "")
