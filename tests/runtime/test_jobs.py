"""Jobs (corral.runtime.worker.jobs): what opening, performing and closing a run does for
each kind of job, without a runner around it."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from corral import FakeClock, NewTask, Settings, Store, enqueue, open_store
from corral.git.task_worktrees import TaskWorktrees
from corral.model.exchange import Held, RunStart
from corral.model.tasks import Task
from corral.runtime.worker import command_job
from corral.runtime.worker.command_job import CommandJob
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.python_job import PythonJob, TaskContext
from corral.runtime.worker.reports import Ending
from corral.runtime.worker.worktree_job import WorktreeJob


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A SQLite store of the test's own."""
    with open_store(str(tmp_path / "corral.db")) as opened:
        yield opened


def place(store: Store) -> Workplace:
    """A registered runner as a job sees it (the worker id is a stand-in)."""
    return Workplace(
        store=store,
        worker_id="w-test",
        settings=Settings(),
        clock=FakeClock(),
        log=logging.getLogger("test.jobs"),
    )


def held(task: Task, run_id: str = "r-1") -> Held:
    """`task` as if claimed under token 7 with run `run_id`."""
    now = FakeClock().now()
    return Held(
        task=task, token=7, run_id=run_id, lease_expires_at=now, claimed_at=now, deadline_at=None
    )


def test_a_command_run_opens_with_what_its_record_says(store: Store, tmp_path: Path) -> None:
    """open prepares the command: its argv, the prompt, and absolute output paths."""
    task = enqueue(store, NewTask(title="say hello"))
    runs = CommandJob(argv=("true",), runs_dir=str(tmp_path / "runs")).begin(place(store))
    try:
        opened = runs.open(task, 7, "r-1")
    finally:
        runs.end()
    start = opened.start
    assert ("true",) == start.command
    assert start.prompt is not None and "say hello" in start.prompt
    assert str(tmp_path / "runs" / "r-1.jsonl") == start.transcript_path
    assert os.getcwd() == start.cwd


def test_a_command_that_cannot_be_prepared_opens_anyway_and_fails_when_performed(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """open never raises inside the claim's transaction: perform raises what went wrong."""

    def broken(*args: object, **kwargs: object) -> command_job.Prepared:
        raise ValueError("no prompt for you")

    monkeypatch.setattr(command_job, "prepare", broken)
    task = enqueue(store, NewTask(title="t"))
    runs = CommandJob(argv=("true",), runs_dir=str(tmp_path / "runs")).begin(place(store))
    try:
        opened = runs.open(task, 7, "r-1")
        assert RunStart(command=("true",), cwd=os.getcwd()) == opened.start
        with pytest.raises(ValueError, match="no prompt for you"):
            runs.perform(held(task), opened, lambda: None)
    finally:
        runs.end()


def test_a_worktree_run_opens_without_git(store: Store, tmp_path: Path) -> None:
    """Under the claim's write lock the worktree job touches nothing: argv and this directory."""
    task = enqueue(store, NewTask(title="t"))
    untouchable = cast(TaskWorktrees, object())  # any use of it would raise
    job = WorktreeJob(
        job=CommandJob(argv=("true",), runs_dir=str(tmp_path / "runs")), worktrees=untouchable
    )
    runs = job.begin(place(store))
    try:
        opened = runs.open(task, 7, "r-1")
    finally:
        runs.end()
    assert RunStart(command=("true",), cwd=os.getcwd()) == opened.start


def test_python_runs_record_the_function_and_keep_state_across_tasks(store: Store) -> None:
    """Every run records the function's name; `ctx.state` is one dict for all of them."""
    seen: list[int] = []

    def count(task: Task, ctx: TaskContext) -> Any:
        ctx.state["n"] = ctx.state.get("n", 0) + 1
        seen.append(ctx.state["n"])

    first, second = (enqueue(store, NewTask(title=f"t{n}")) for n in range(2))
    runs = PythonJob(execute=count).begin(place(store))
    opened = [runs.open(task, 7, f"r-{n}") for n, task in enumerate((first, second))]
    dones = [
        runs.perform(held(t), o, lambda: None) for t, o in zip((first, second), opened, strict=True)
    ]
    runs.end()
    assert (count.__qualname__,) == opened[0].start.command
    assert opened[0].start == opened[1].start
    assert [Ending.EXITED, Ending.EXITED] == [d.ending for d in dones]
    assert [1, 2] == seen
