"""How a run in a worktree ends (runtime/worker/worktree_job.settle, git/task_worktrees.py),
on both stores and a real repository: up to the Done it reports (the store applies a wait
once the waiting part of issue 27 is merged)."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import pytest

import corral
from corral.foundation.settings import Settings
from corral.git.task_worktrees import TaskWorktrees
from corral.git.worktrees import Worktrees
from corral.model.events import EventFilter
from corral.model.reviews import WorkOutcome
from corral.model.tasks import NewTask
from corral.runtime.worker.reports import Done, Ending
from corral.runtime.worker.worktree_job import settle

from .conftest import commit_file, git

SUCCESS = Done(ending=Ending.EXITED, success=True, exit_code=0)


@pytest.fixture
def entered(store, settings, repo):
    """A task claimed and entered into its worktree as a runner does, with `[worktree]`
    settings given: (task, token, trees, path)."""

    def enter(**worktree: str):
        policy = replace(Settings().worktree, **worktree)
        trees = TaskWorktrees(
            store,
            Worktrees.open(str(repo), policy),
            worker_name="w",
            base_ref="main",
            policy=policy,
            log=logging.getLogger("test.settle"),
        )
        task = corral.enqueue(store, NewTask(title="Edit"), settings=settings)
        spec = corral.NewWorker(name="w", hostname="h", pid=None)
        worker = corral.register(store, spec, settings=settings).worker
        claim = corral.claim(store, task.id, worker.id, settings=settings)
        where = trees.enter(store.tasks.get_task(task.id), claim.token, worker.id)
        return store.tasks.get_task(task.id), claim.token, trees, Path(where.path)

    return enter


def test_an_empty_run_waits_with_its_reason_by_default(store, entered):
    """on_empty = wait: not a success, the wait reason "no_change: the run changed nothing",
    and the outcome no_change recorded."""
    task, _, trees, _ = entered()
    done = settle(trees, task, "r-1", SUCCESS, ())
    expected = (False, "no_change: the run changed nothing", None)
    assert expected == (done.success, done.wait_reason, done.error)
    assert WorkOutcome.NO_CHANGE is store.reviews.get_review(task.id).outcome


@pytest.mark.parametrize(
    ("on_empty", "success", "error"),
    [("fail", False, "the run changed nothing"), ("done", True, None)],
)
def test_on_empty_fail_and_done(store, entered, on_empty, success, error):
    """on_empty = fail: a failure with that error; done: a success, as before."""
    task, _, trees, _ = entered(on_empty=on_empty)
    done = settle(trees, task, "r-1", SUCCESS, ())
    assert (success, error, None) == (done.success, done.error, done.wait_reason)


def test_a_run_on_a_branch_with_earlier_commits_that_adds_none_is_empty(store, entered, repo):
    """Empty is measured from the commit the run started at, not from the base: a branch
    that already had a commit before this run, which adds nothing, changed nothing."""
    task, token, trees, path = entered()
    commit_file(path, "early.txt", "from an earlier run\n")
    trees.leave(task.id, token)  # the task is running: kept
    again = trees.enter(store.tasks.get_task(task.id), token, "w")
    assert (str(path), True) == (again.path, again.reused)
    assert settle(trees, task, "r-2", SUCCESS, ()).wait_reason is not None


def test_a_slot_that_leaves_after_another_entered_the_task_again_leaves_it_be(
    store, settings, clock, entered
):
    """A failed run's report makes the task ready; another slot may claim and enter it
    before the first slot leaves. That leave, of an older claim, forgets nothing of the new
    run: its commit is still read from its worktree (a CI run once landed nothing here)."""
    task, token, trees, path = entered()
    corral.fail(store, task.id, token=token, error="land conflict", settings=settings)
    clock.advance(settings.retry_base_s)
    spec = corral.NewWorker(name="w2", hostname="h", pid=None)
    worker = corral.register(store, spec, settings=settings).worker
    claim = corral.claim(store, task.id, worker.id, settings=settings)
    again = trees.enter(store.tasks.get_task(task.id), claim.token, worker.id)
    trees.leave(task.id, token)
    made = commit_file(path, "edit.txt", "edit\n")
    assert (str(path), made) == (again.path, trees.final_commit(task.id))


def test_what_the_agent_left_is_committed_and_counts_as_a_change(store, entered, repo):
    """commit = auto: the uncommitted edit becomes a commit on the branch; a success."""
    task, _, trees, path = entered()
    (path / "edit.txt").write_text("edit\n")
    done = settle(trees, task, "r-1", SUCCESS, ())
    assert (True, None) == (done.success, done.wait_reason)
    assert "edit.txt" == git(path, "show", "--name-only", "--format=", "HEAD")


def test_commit_agent_leaves_the_edit_and_the_run_is_empty(store, entered):
    """commit = agent: nothing is committed for the agent; its uncommitted edit does not
    count."""
    task, _, trees, path = entered(commit="agent")
    (path / "edit.txt").write_text("edit\n")
    assert settle(trees, task, "r-1", SUCCESS, ()).wait_reason is not None
    assert "?? edit.txt" == git(path, "status", "--porcelain")


def test_a_refused_run_keeps_its_reason_and_is_recorded_refused(store, entered):
    """A Done the reader already made waiting (refused: Bash) keeps that reason, commits
    nothing, and the outcome refused is recorded."""
    task, _, trees, path = entered()
    (path / "half.txt").write_text("half\n")
    refused = Done(ending=Ending.EXITED, success=False, exit_code=0, wait_reason="refused: Bash")
    assert refused == settle(trees, task, "r-1", refused, ())
    assert WorkOutcome.REFUSED is store.reviews.get_review(task.id).outcome
    assert "?? half.txt" == git(path, "status", "--porcelain")


def test_a_run_without_commits_lands_nothing_even_when_the_base_moved(store, entered, repo):
    """A task runs again on its branch, which has no commit of its own, after the base moved
    on: its run commits nothing, so nothing lands and no task.landed event names another
    task's commit (issue 27's Codex run)."""
    task, token, trees, _ = entered(on_empty="done")
    trees.leave(task.id, token)  # still running: kept, as for a run that is retried
    commit_file(repo, "other.txt", "another task's work\n")
    trees.enter(store.tasks.get_task(task.id), token, "w")
    done = settle(trees, task, "r-2", SUCCESS, ())
    head = trees.final_commit(task.id)
    assert (True, None) == (done.success, trees.land(task, token, head).error)
    assert [] == store.events.list_events(EventFilter(task_id=task.id, names=("task.landed",)))
    assert store.reviews.get_review(task.id).merged_commit is None
