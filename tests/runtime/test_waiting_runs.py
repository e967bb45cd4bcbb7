"""A run that ends needing a person leaves its task `waiting`; `corral answer` sends it back,
and the next run of the task is told the answer in its prompt."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import CORRAL
from tests.runtime.conftest import wait_until

import corral
from corral import NewTask, RunOutcome, Settings, Store, SystemClock, TaskStatus, open_store
from corral.model.exchange import Held
from corral.model.waiting import WaitKind, reason
from corral.runtime.worker.command_job import CommandJob
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.jobs import Opened, Runs, Stop
from corral.runtime.worker.reports import Done
from corral.runtime.worker.runner import Runner, RunnerConfig

REFUSED = reason(WaitKind.REFUSED, "Bash")
ANSWER = "You may run the tests with Bash."
BOUND_S = 30.0


@dataclass(frozen=True, slots=True)
class UntilAnswered:
    """A real command job whose runs end needing a person until a person has answered the
    task, as the landing issue's refused or empty runs do: Done(wait_reason=...)."""

    job: CommandJob

    def begin(self, place: Workplace) -> Runs[Any]:
        return _UntilAnsweredRuns(self.job.begin(place))


class _UntilAnsweredRuns:
    def __init__(self, runs: Runs[Any]) -> None:
        self._runs = runs
        self.start = runs.start

    def open(self, task: corral.Task, token: int, run_id: str) -> Opened[Any]:
        return self._runs.open(task, token, run_id)

    def perform(self, held: Held, opened: Opened[Any], stop: Stop) -> Done:
        done = self._runs.perform(held, opened, stop)
        return done if held.task.answered_reason else replace(done, wait_reason=REFUSED)

    def close(self, held: Held, opened: Opened[Any]) -> None:
        self._runs.close(held, opened)

    def end(self) -> None:
        self._runs.end()


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[Store, str, Path]]:
    """A SQLite store, a runner whose command saves each prompt it is given to
    prompts/<run id>, and the store's path."""
    db = str(tmp_path / "corral.db")
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    script = tmp_path / "agent.sh"
    script.write_text(f'#!/bin/sh\ncat > "{prompts}/$CORRAL_RUN_ID"\n')
    script.chmod(0o700)
    job = CommandJob(argv=(str(script),), runs_dir=str(tmp_path / "runs"))
    store = open_store(db)
    runner = Runner(
        store,
        RunnerConfig(name="asker", idle_min_s=0.01, idle_max_s=0.05),
        UntilAnswered(job),
        settings=Settings(),
        clock=SystemClock(),
    )
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    yield store, db, prompts
    runner.stop(immediate=True)
    thread.join(BOUND_S)
    store.close()


def test_a_run_that_needs_a_person_waits_and_the_answer_reaches_the_next_prompt(
    running: tuple[Store, str, Path],
) -> None:
    """Done(wait_reason) -> the task waits, its run ends `waiting`; `corral answer` -> ready,
    claimed again, and that run's prompt ends with the reason and the answer."""
    store, db, prompts = running
    task = corral.enqueue(store, NewTask(title="run the tests"))
    wait_until(lambda: store.tasks.get_task(task.id).status is TaskStatus.WAITING, BOUND_S)
    waiting = store.tasks.get_task(task.id)
    (first,) = store.runs.list_runs(task_id=task.id)
    assert (REFUSED, 0, RunOutcome.WAITING) == (
        waiting.wait_reason,
        waiting.attempts,
        first.outcome,
    )
    assert "A person answered" not in (prompts / first.id).read_text()

    answered = subprocess.run(
        [CORRAL, "answer", task.id, ANSWER, "--db", db],
        capture_output=True,
        text=True,
        timeout=BOUND_S,
        check=False,
    )
    assert (0, f"{task.id} ready (answered)\n") == (answered.returncode, answered.stdout)
    wait_until(lambda: store.tasks.get_task(task.id).status is TaskStatus.DONE, BOUND_S)
    second = next(r for r in store.runs.list_runs(task_id=task.id) if r.id != first.id)
    told = f"waited for a person ({REFUSED}).\nA person answered: {ANSWER}\n"
    assert (RunOutcome.DONE, True, True) == (
        second.outcome,
        (prompts / second.id).read_text().endswith(told),
        (second.prompt or "").endswith(told),
    )
