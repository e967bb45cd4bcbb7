"""Command tasks in worktrees (`worker start --worktree`): each task's command in its own.

The same command job (command_job.py), with the worktree around each run
(git/task_worktrees.py):

    open     the run record says the command and this directory for now: git must not
             run under the claim's write lock
    perform  enter the task's worktree (made, reused while the task runs again, or made
             from the backup of its work) ─► prepare the command there (an agent resumes
             its session only in a worktree that was there already) ─► record where the
             run really runs, and the commit it starts from ─► run it ─► after a success:
             what the agent left committed (`worktree.commit = auto`; a refused commit
             fails the run), a run that changed nothing ended as `worktree.on_empty` says,
             what its commits disable of the tests flagged on the task
             (git/disabled_tests.py), the verify step, if configured (verify_step.py:
             its failure sends the task back to its agent, model/verify_retries.py;
             before it, a branch that will land has the base merged in,
             git/catch_up.py, and the land is built onto that base commit alone: when
             the base moved meanwhile, merged in and verified again, VERIFY_ROUNDS
             times at most)
             ─► the commit it ends at, in its report; after a success, its branch landed
             as `worktree.land` says, while the claim is held (a land conflict fails the
             run); a refused run (the agent was denied what it needed) recorded as such
    close    after the report was applied, so that a task now in review keeps its
             worktree: leave it (removed unless kept)
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from corral.foundation.logs import event
from corral.git.run_commit import CommitFailed
from corral.git.task_worktrees import Entered, TaskWorktrees
from corral.model import verify_retries, waiting
from corral.model.exchange import Held
from corral.model.reviews import WorkOutcome
from corral.model.runs import Run
from corral.model.tasks import Task
from corral.model.waiting import WaitKind
from corral.runtime.worker.command_job import CommandJob, CommandRuns, prepare
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.jobs import Opened, Stop
from corral.runtime.worker.reports import Done
from corral.runtime.worker.retries import retrying
from corral.runtime.worker.verify_step import VerifyStep, prompt_note

NO_CHANGE = "the run changed nothing"
# Verify steps a run may take when the base keeps moving while each runs (another task
# landed meanwhile): each merges the new base in and checks it; then the run fails rather
# than land what no step has seen.
VERIFY_ROUNDS = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class WorktreeJob:
    """A command job whose every task runs in its own git worktree."""

    job: CommandJob
    worktrees: TaskWorktrees
    verify: VerifyStep | None = None

    def begin(self, place: Workplace) -> WorktreeRuns:
        """This job's runs for the worker `place` describes (jobs.Job)."""
        return WorktreeRuns(self, place)


# The task's runs read back, past its verify retries, for the interruptions between them
# (verify_retries.spent).
HISTORY_RUNS = 50


def in_worktree(job: CommandJob, entered: Entered, verify_failure: str | None) -> CommandJob:
    """The job as it runs in a task's worktree: there, told where it is, and, after changes
    were requested, with the reviewer's note in its prompt; after its last run failed the
    verify step, with that failure (`verify_failure`: in the prompt of a new session and
    of a resumed one)."""
    template = job.template
    # `$` would start a placeholder in the template: the notes are text, not templates.
    if entered.changes_note:
        note = entered.changes_note.replace("$", "$$")
        checks = entered.changes_note.startswith(verify_retries.CHECKS_PREFIX)
        said = "Its " if checks else "Changes requested by the reviewer:\n"
        template += "\n" + said + note + "\n"
    if entered.rebase_onto:
        base = entered.rebase_onto.replace("$", "$$")
        template += (
            f"\nOnly a branch on top of {base} can be approved: rebase onto it "
            f"(`git rebase {base}`) before you finish.\n"
        )
    verify_note = prompt_note(verify_failure)
    if verify_note:
        template += verify_note.replace("$", "$$")
    env = {**job.extra_env, **entered.env()}
    return replace(
        job,
        workdir=entered.path,
        extra_env=env,
        template=template,
        changes_note=entered.changes_note,
        verify_note=verify_note,
    )


def settle(
    trees: TaskWorktrees, task: Task, run_id: str, done: Done, written: tuple[str | None, ...]
) -> Done:
    """After the command: what the agent left committed (`worktree.commit = auto`; a commit
    git refuses fails the run), and a run that changed nothing ended as `worktree.on_empty`
    says (recorded as no_change); a refused run recorded as refused."""
    if not done.success:
        if waiting.kind_of(done.wait_reason) is WaitKind.REFUSED:
            trees.note_outcome(task.id, WorkOutcome.REFUSED)
        return done
    try:
        trees.commit_left(task, run_id, written)
    except CommitFailed as exc:
        return replace(done, success=False, error=exc.message)
    if trees.changed(task.id):
        return done
    trees.note_outcome(task.id, WorkOutcome.NO_CHANGE)
    if trees.on_empty == "wait":
        return replace(
            done, success=False, wait_reason=waiting.reason(WaitKind.NO_CHANGE, NO_CHANGE)
        )
    if trees.on_empty == "fail":
        return replace(done, success=False, error=NO_CHANGE)
    return done


class WorktreeRuns:
    """The runs of a worktree job for one worker (jobs.Runs): prepared once in the worktree."""

    def __init__(self, job: WorktreeJob, place: Workplace) -> None:
        self._job, self._trees, self._place = job.job, job.worktrees, place
        self._verify = job.verify
        self._commands = CommandRuns(job.job, place)
        self.start = self._commands.start

    def open(self, task: Task, token: int, run_id: str) -> Opened[None]:
        """The command and this directory, until perform knows the worktree."""
        return Opened(start=self.start, prepared=None)

    def perform(self, held: Held, opened: Opened[None], stop: Stop) -> Done:
        """Enter the task's worktree, run the command there; the commit it ended at."""
        place, task, run_id = self._place, held.task, held.opened_run()
        entered = self._trees.enter(task, held.token, place.worker_id)
        failure = None if self._verify is None else verify_retries.last_failure(self._runs(task))
        job = in_worktree(self._job, entered, failure)
        prepared = prepare(
            job,
            task,
            token=held.token,
            run_id=run_id,
            worker_id=place.worker_id,
            db=place.store.url,
            namespace=place.store.namespace,
        )
        if job.agent is not None and entered.reused:
            prepared = self._commands.resumed(job, held, prepared)
        start = prepared.run_start(base_commit=entered.start_commit, site=self._trees.site)
        place.store.runs.set_run_start(run_id, start)
        done = self._commands.run(job, run_id, prepared, stop)
        written = (prepared.prompt_file, prepared.spec.transcript_path, prepared.spec.stderr_path)
        done = settle(self._trees, task, run_id, done, written)
        if done.success:
            self._trees.flag_disabled_tests(task.id)
        output_base = os.path.splitext(prepared.spec.transcript_path)[0]
        for _ in range(VERIFY_ROUNDS):
            done, onto = self._verified(held, entered, done, output_base, stop)
            head = self._trees.final_commit(task.id)
            if not done.success:
                return replace(done, final_commit=head)
            after = self._trees.land(task, held.token, head, onto=onto)
            if after.error is not None:
                return replace(done, success=False, error=after.error, final_commit=head)
            if not after.moved:
                return replace(done, final_commit=head)
            event(place.log, "task.base_moved", task_id=task.id, onto=onto)
        error = f"the base moved during each of {VERIFY_ROUNDS} verify steps: not landed unverified"
        return replace(done, success=False, error=error, final_commit=head)

    def _verified(
        self, held: Held, entered: Entered, done: Done, output_base: str, stop: Stop
    ) -> tuple[Done, str | None]:
        """The verify step, if configured, after the base was merged in (so it checks what
        the land will put on the base): the run's outcome then, and the base commit the
        land is to be built onto (None: any, as without a verify step)."""
        if self._verify is None:
            return done, None
        onto = self._trees.catch_up(held.task) if done.success else None
        done = self._verify.after(
            done,
            task=held.task,
            run_id=held.opened_run(),
            workdir=entered.path,
            env=entered.env(),
            output_base=output_base,
            clock=self._place.clock,
            stop=stop,
            spent=lambda: verify_retries.spent(self._runs(held.task)),
        )
        return done, onto

    def _runs(self, task: Task) -> list[Run]:
        """The task's latest runs, newest first (this one, still open, among them), read
        again while the store is briefly out, as a report is (retries.py)."""
        retries = 0 if self._verify is None else self._verify.retries
        runs = self._place.store.runs
        return retrying(
            lambda: runs.list_runs(task_id=task.id, limit=retries + HISTORY_RUNS), self._place
        )

    def close(self, held: Held, opened: Opened[None]) -> None:
        """Leave the task's worktree: removed, unless kept or the task is in review."""
        self._trees.leave(held.task.id, held.token)

    def end(self) -> None:
        """Stop the command runs' spare output files."""
        self._commands.end()
