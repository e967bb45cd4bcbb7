"""Python tasks: `execute(task, ctx)` called in the runner's own process.

`ctx` carries corral's primitives (`worker_id`, `run_id`, `task`, `renew_lease()`,
`log()`, `progress()`, `report()`, `stopping`, `state`) and, as attributes, whatever the
caller passed as `context` (`ctx.llm`). `state` is one dict kept across the worker's
tasks. The function returns `{"success": bool, "output": ..., "error": ...}`, or None
for success; an exception fails the task with its message.

A Python task cannot be killed from outside its thread: its timeout caps the lease
(heartbeats never extend a lease past it), so a task that overruns loses its claim and
its late result is refused by the fencing token. Long tasks should look at
`ctx.stopping` now and then, and return when it is set.

As a job (jobs.py): every run records the function's name as its command and opens
nothing else; performing it is the call; closing it releases nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from corral.foundation import documents
from corral.foundation.logs import event
from corral.foundation.settings import Settings
from corral.model.exchange import Held, RunStart
from corral.model.tasks import Task
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.jobs import Opened, Stop
from corral.runtime.worker.reports import Done, Ending
from corral.store import Store
from corral.usecases import claims

Execute = Callable[[Task, "TaskContext"], Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class PythonJob:
    """Every task of this runner is a call of `execute(task, ctx)`."""

    execute: Execute
    capture_io: Any = None  # (run_id, task) -> {"transcript_path": ..., "stderr_path": ...}
    context: dict[str, Any] = field(default_factory=dict)

    def begin(self, place: Workplace) -> PythonRuns:
        """This job's runs for the worker `place` describes (jobs.Job)."""
        return PythonRuns(self, place)


class PythonRuns:
    """The runs of a Python job for one worker (jobs.Runs): calls in this process."""

    def __init__(self, job: PythonJob, place: Workplace) -> None:
        self._job, self._place = job, place
        self._state: dict[str, Any] = {}  # `ctx.state`: one dict across the worker's tasks
        name = str(getattr(job.execute, "__qualname__", repr(job.execute)))
        # Every run says the same: the function's name, run here. One record for them all.
        self.start = RunStart(command=(name,), cwd=os.getcwd())
        self._opened = Opened(start=self.start, prepared=None)

    def open(self, task: Task, token: int, run_id: str) -> Opened[None]:
        """The function's name and this directory."""
        return self._opened

    def perform(self, held: Held, opened: Opened[None], stop: Stop) -> Done:
        """Call the function (its output files first, with `capture_io`)."""
        job, place, task = self._job, self._place, held.task
        if job.capture_io:
            paths = job.capture_io(held.opened_run(), task) or {}
            place.store.runs.set_run_paths(
                held.opened_run(),
                transcript_path=paths.get("transcript_path"),
                stderr_path=paths.get("stderr_path"),
            )
        ctx = TaskContext(
            store=place.store,
            settings=place.settings,
            worker_id=place.worker_id,
            run_id=held.opened_run(),
            task=task,
            token=held.token,
            state=self._state,
            extra=job.context,
            stop=stop,
            log=place.log,
        )
        return run_callable(job.execute, task, ctx)

    def close(self, held: Held, opened: Opened[None]) -> None:
        """Nothing to release."""

    def end(self) -> None:
        """Nothing runs between calls."""


class TaskContext:
    """What a Python task may use; unknown attributes come from the caller's context."""

    def __init__(
        self,
        *,
        store: Store,
        settings: Settings,
        worker_id: str,
        run_id: str,
        task: Task,
        token: int,
        state: dict[str, Any],
        extra: dict[str, Any],
        stop: Stop,
        log: logging.Logger,
    ) -> None:
        self.worker_id = worker_id
        self.run_id = run_id
        self.task = task
        self.state = state
        self.usage: dict[str, Any] = {}
        self._store, self._settings, self._token = store, settings, token
        self._extra, self._stop, self._log = extra, stop, log

    def __getattr__(self, name: str) -> Any:
        try:
            return self._extra[name]
        except KeyError:
            raise AttributeError(f"ctx has no attribute {name!r}") from None

    @property
    def stopping(self) -> str | None:
        """Why the runner wants this task to stop (shutdown, lost claim), or None."""
        return self._stop()

    def renew_lease(self, lease_s: float | None = None) -> None:
        """Extend this task's lease explicitly (bounded by max_renewals)."""
        claims.renew(
            self._store, self.task.id, token=self._token, lease_s=lease_s, settings=self._settings
        )

    def log(self, message: str) -> None:
        """A line in the worker's log, tagged with the task and run."""
        event(self._log, "task.log", task_id=self.task.id, run_id=self.run_id, message=message)

    def progress(self, note: str | None = None) -> None:
        """Record that the task is making progress (shown on the run)."""
        self._store.runs.record_progress(self.run_id, note and documents.without_nul(note))

    def report(self, **usage: Any) -> None:
        """Usage figures for the run record, e.g. `report(tokens=1200, cost_usd=0.03)`."""
        self.usage.update(usage)


def run_callable(execute: Execute, task: Task, ctx: TaskContext) -> Done:
    """Call `execute` and describe how it ended."""
    try:
        returned = execute(task, ctx)
    except (Exception, SystemExit, KeyboardInterrupt) as exc:
        return Done(
            ending=Ending.RAISED,
            success=False,
            error=f"{type(exc).__name__}: {exc}",
            usage=ctx.usage or None,
        )
    if returned is None:
        return Done(ending=Ending.EXITED, success=True, usage=ctx.usage or None)
    if not isinstance(returned, dict) or not isinstance(returned.get("success"), bool):
        error = "execute must return None or a dict with a boolean 'success'"
        return Done(ending=Ending.EXITED, success=False, error=f"{error}, got {returned!r}"[:500])
    return Done(
        ending=Ending.EXITED,
        success=returned["success"],
        error=None
        if returned["success"]
        else str(returned.get("error") or "execute reported failure"),
        result=returned.get("output"),
        usage=ctx.usage or None,
    )
