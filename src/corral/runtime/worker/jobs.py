"""Jobs: what a runner does with each task it holds, so the runner never asks which kind.

A runner is given a `Job`: what its tasks are (a command: command_job.py; a command in a
git worktree per task: worktree_job.py; a Python function: python_job.py). Once its
worker is registered, the runner begins the job as `Runs` for that worker, and every task
it holds goes through the same three steps:

    open(task, token, run_id) ─► Opened      in the claim's write transaction, so quick:
          what the run record says, and what the job prepared to perform. It never raises
          (a failure is kept in `prepared`, and perform raises it: the task fails), and it
          makes nothing that must be undone, since the transaction may roll back.
    perform(held, opened, stop) ─► Done      on a lane's thread: the run, to its end;
          `stop()` says why the runner wants it to end now ("shutdown", "lease_lost").
    close(held, opened)                      once the run's report was applied, whatever
          it said (a task given back unstarted too): what open and perform made is
          released (a worktree is left, or kept for review).

`end()` stops what the runs keep going between tasks (the spare output files of
commands), when the runner stops. What open prepared travels with its run in `Opened`,
never through a dict the runner keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

from corral.model.exchange import Held, RunStart
from corral.model.tasks import Task
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.reports import Done

P = TypeVar("P")
Stop = Callable[[], str | None]  # why the runner wants the task to stop now, or None


# A NamedTuple, not a frozen dataclass: made for every run, and defining one costs each
# runner's start-up a seventh of what a dataclass does (bench/orchestrator_lifecycle.py).
class Opened(NamedTuple, Generic[P]):
    """A run as its job opened it: what its record says, and what the job prepared."""

    start: RunStart
    prepared: P


class Runs(Protocol[P]):
    """A job's runs for one registered worker (module docstring). `start` is how a run is
    recorded unless `open` says more: the claim opens every run so, and records only what
    differs (on PostgreSQL the server opens them, then the differences are written)."""

    start: RunStart

    def open(self, task: Task, token: int, run_id: str) -> Opened[P]:
        """Describe the run of a task just claimed; never raises."""
        ...

    def perform(self, held: Held, opened: Opened[P], stop: Stop) -> Done:
        """Run it to its end and say how it ended."""
        ...

    def close(self, held: Held, opened: Opened[P]) -> None:
        """Release what the run made, once its report was applied."""
        ...

    def end(self) -> None:
        """Stop what runs between tasks; the runner is stopping."""
        ...


class Job(Protocol):
    """What every task of a runner is (a command, a function ...)."""

    def begin(self, place: Workplace) -> Runs[Any]:
        """The job's runs for the worker `place` describes."""
        ...
