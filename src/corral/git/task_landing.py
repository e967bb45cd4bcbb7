"""What a runner does with a task's branch after a run that succeeded (`worktree.land`).

    run succeeded ─► no commit since the run started ─► nothing (worktree.on_empty decides)
                  ─► review required ─► nothing (the review flow), noted in_review
                  ─► land = keep     ─► the branch stays, noted kept: `corral branches`
                  ─► land = merge    ─► under the merge lock: merged onto the base and
                                        recorded (the branch then goes with the worktree),
                                        or a conflict: the files and a note for the next run
                                        recorded, and the run fails
                  ─► land = command  ─► the user's command, in the worktree, told the branch,
                                        base and task; a non-zero exit fails the run

It runs before the run is reported, while the claim is held: the task is done only once
its work is on the base, so its dependents start from a base that has it. A merge git
refuses outright (the base's checkout has uncommitted changes, a fast-forward that is
not one) keeps the branch, with a warning in the worker's log: the work stays visible in
`corral branches` for `corral land`, rather than failing every task while someone edits
the checkout.
"""

from __future__ import annotations

import logging
import os
import shlex
import subprocess
from typing import TYPE_CHECKING, NamedTuple

from corral import landings
from corral.errors import InvalidInput, Refused
from corral.git.merging import GitBranches
from corral.logs import event
from corral.model.reviews import MergeStrategy, WorkOutcome
from corral.model.states import TaskStatus

if TYPE_CHECKING:
    from corral.git.task_worktrees import Entered
    from corral.git.worktrees import Worktrees
    from corral.model.tasks import Task
    from corral.policies import WorktreePolicy
    from corral.store import Store

# A land command (say, one that pushes and opens a pull request) that has not finished in
# this long is stuck; its run fails rather than holding the worker's slot for ever.
LAND_COMMAND_TIMEOUT_S = 600.0
OUTPUT_TAIL_CHARS = 500


class AfterSuccess(NamedTuple):
    """What landing a run's branch did: the error that fails the run, and where the work
    ended when the runner is to record it (a land records `landed` itself)."""

    error: str | None = None
    outcome: WorkOutcome | None = None


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
        self._store, self._repo, self._log = store, GitBranches(trees), log
        self._mode, self._strategy = policy.land, MergeStrategy(policy.merge_strategy)

    def after_success(
        self, task: Task, token: int, entered: Entered, head: str | None
    ) -> AfterSuccess:
        """Land the branch of a run that succeeded: what it did."""
        if head is None or head == entered.start_commit:
            return AfterSuccess()
        if task.requires_review:
            return AfterSuccess(outcome=WorkOutcome.IN_REVIEW)
        if self._mode == "keep":
            event(self._log, "task.branch_kept", task_id=task.id, branch=entered.branch)
            return AfterSuccess(outcome=WorkOutcome.KEPT)
        if self._mode == "command":
            return AfterSuccess(error=self._run_command(task, entered))
        return self._merge(task, token, entered)

    def _merge(self, task: Task, token: int, entered: Entered) -> AfterSuccess:
        with self._repo.locked():
            now = self._store.get_task(task.id)
            if now.status is TaskStatus.DONE:  # the agent ran `corral done` itself
                token_or_none = None
            elif now.status is TaskStatus.RUNNING:
                token_or_none = token
            else:  # submitted for review by its agent, or no longer ours: not to land
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
                return AfterSuccess(outcome=WorkOutcome.KEPT)
        if landed.conflicts:
            files = ", ".join(landed.conflicts)
            return AfterSuccess(error=f"land conflict with {entered.base_ref} in {files}")
        event(
            self._log,
            "task.landed",
            task_id=task.id,
            branch=entered.branch,
            base=entered.base_ref,
            commit=landed.merged_commit,
        )
        return AfterSuccess()

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
