"""What one redraw of `corral status --watch` reads: bounded queries and the ends of files.

A redraw must cost the same whatever the store's history (bench/status_watch.py: 1,000
running tasks beside 100,000 finished ones). So the tasks are counted by status and by
queue, never listed; the running tasks are the oldest `running_limit` active claims, the
tasks waiting for a person the oldest `running_limit` of them (a few: each needs a
person), the events the newest `events_limit`; and each shown task's last output line
comes from the last few KB of its file, read from the end. Unlike `corral status` it does
not look for leftover processes: that reads the environment of every process on the host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from corral import orchestrators, queues, workers
from corral.model.claims import RunningTask
from corral.model.events import Event, EventFilter
from corral.model.queues import QueueStat
from corral.model.states import TaskStatus
from corral.model.tasks import Task, TaskFilter
from corral.model.workers import Worker
from corral.orchestrators import OrchestratorReport
from corral.settings import Settings
from corral.store import Store

# How much of an output file's end is read for its last line: lines longer than this show
# their end only, which is what a screen line has room for anyway.
TAIL_BYTES = 4096


@dataclass(frozen=True, slots=True, kw_only=True)
class Glance:
    """One screen's data, read at `orchestrator.now`; `last_output` maps a task id to the
    last line its run printed."""

    orchestrator: OrchestratorReport
    workers: list[Worker]
    queues: list[QueueStat]
    tasks: dict[str, int]
    running: list[RunningTask]
    last_output: dict[str, str]
    events: list[Event]
    waiting: list[Task]  # waiting for a person, oldest first (their count: tasks["waiting"])


def glance(store: Store, *, settings: Settings, running_limit: int, events_limit: int) -> Glance:
    """Read one screen: the orchestrator and its slots, the live workers, counts, the oldest
    `running_limit` running tasks with their last output lines and waiting tasks, the
    newest `events_limit` events."""
    running = store.running_tasks(running_limit)
    return Glance(
        orchestrator=orchestrators.status(store, liveness=settings.liveness),
        workers=workers.live(store),
        queues=queues.queue_stats(store),
        tasks=store.task_counts(),
        running=running,
        last_output={r.task_id: last_output_line(r) for r in running},
        events=store.list_events(EventFilter(limit=events_limit)) if events_limit else [],
        waiting=store.list_tasks(TaskFilter(statuses=(TaskStatus.WAITING,), limit=running_limit)),
    )


def last_output_line(task: RunningTask) -> str:
    """The last line of the run's transcript, else of its stderr; '' before either has one."""
    return last_line(task.transcript_path) or last_line(task.stderr_path)


def last_line(path: str | None) -> str:
    """The last non-blank line within the final TAIL_BYTES of `path` ('' if there is none,
    or no file), decoded as UTF-8 with bad bytes replaced. Raw: the caller cleans it."""
    if path is None:
        return ""
    try:
        with open(path, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - TAIL_BYTES))
            tail = handle.read(TAIL_BYTES)
    except OSError:  # not written yet, rotated away, unreadable: nothing to show
        return ""
    for line in reversed(tail.splitlines()):
        if line.strip():
            return line.decode("utf-8", "replace")
    return ""
