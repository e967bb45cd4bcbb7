"""What one redraw of `corral status --watch` reads: bounded queries and the ends of files.

A redraw must cost the same whatever the store's history (bench/status_watch.py: 1,000
running tasks beside 100,000 finished ones). So the tasks are counted by status and by
queue, never listed; the running tasks are the oldest `running_limit` active claims, the
tasks waiting for a person the oldest `running_limit` of them (a few: each needs a
person), the events the newest `events_limit`, where tasks' work ended the kept and
landed `running_limit` of each with counts by outcome over a day (store.reviews.work_ends: an
index on the outcome and its time); and each shown task's last output line
comes from the last few KB of its file, read from the end, in words: an agent's JSON
stream shows the assistant's text or the tool it is using, never raw JSON
(runtime/worker/stream_text.py); when the last few KB hold no such line (a long tool
result ends a claude transcript), up to LONG_TAIL_BYTES are read. Unlike `corral status`
it does not look for leftover processes: that reads the environment of every process on
the host.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta

from corral.foundation.settings import Settings
from corral.model.claims import RunningTask
from corral.model.events import Event, EventFilter
from corral.model.providers import ProviderState
from corral.model.queues import QueueStat
from corral.model.reviews import RECENT_WORK_S, WorkEnds
from corral.model.states import TaskStatus
from corral.model.tasks import Task, TaskFilter
from corral.model.workers import Worker
from corral.runtime.worker.stream_text import readable
from corral.store import Store
from corral.usecases import orchestrators, queues, workers
from corral.usecases.orchestrators import OrchestratorReport

# How much of an output file's end is read for its last line: lines longer than this show
# their end only, which is what a screen line has room for anyway.
TAIL_BYTES = 4096
LONG_TAIL_BYTES = 65536  # read when the short tail held nothing to show


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
    held: list[ProviderState]  # the provider accounts whose claims are held back now
    work: WorkEnds  # where tasks' work ended: kept for a person, landed lately


def glance(store: Store, *, settings: Settings, running_limit: int, events_limit: int) -> Glance:
    """Read one screen: the orchestrator and its slots, the live workers, counts, the oldest
    `running_limit` running tasks with their last output lines and waiting tasks, the
    newest `events_limit` events, the provider accounts held back (parked, paused, at
    their cap), where tasks' work ended."""
    running = store.claims.running_tasks(running_limit)
    report = orchestrators.status(store, liveness=settings.liveness)
    since = report.now - timedelta(seconds=RECENT_WORK_S)
    counts = store.tasks.task_counts()
    # Listed only when counted: list_tasks walks the tasks in the order they were added,
    # every one of them when none waits (10 ms at 100,000, bench/status_watch.py).
    waiting = TaskFilter(statuses=(TaskStatus.WAITING,), limit=running_limit)
    return Glance(
        orchestrator=report,
        workers=workers.live(store),
        queues=queues.queue_stats(store),
        tasks=counts,
        running=running,
        last_output={r.task_id: last_output_line(r) for r in running},
        events=store.events.list_events(EventFilter(limit=events_limit)) if events_limit else [],
        waiting=store.tasks.list_tasks(waiting) if counts.get(TaskStatus.WAITING) else [],
        held=[p for p in store.providers.provider_states() if p.held],
        work=store.reviews.work_ends(since=since, limit=running_limit),
    )


def last_output_line(task: RunningTask) -> str:
    """The last line of the run's transcript in words, else of its stderr; '' before
    either has one."""
    return last_line(task.transcript_path) or last_line(task.stderr_path)


def last_line(path: str | None) -> str:
    """The last line within the end of `path` with words to show ('' if there is none, or
    no file), decoded as UTF-8 with bad bytes replaced: a JSON event in words
    (stream_text.readable), other text as it is. Not cleaned: the caller does that."""
    if path is None:
        return ""
    for window in (TAIL_BYTES, LONG_TAIL_BYTES):
        tail, whole = _tail(path, window)
        lines = tail.splitlines()
        if not whole:
            lines = lines[1:]  # begun mid-line: a piece, never shown
        for line in reversed(lines):
            words = readable(line.decode("utf-8", "replace"))
            if words:
                return words
        if whole:
            break
    return ""


def _tail(path: str, window: int) -> tuple[bytes, bool]:
    """The last `window` bytes of `path`, and whether they are the whole file."""
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            handle.seek(max(0, size - window))
            return handle.read(window), size <= window
    except OSError:  # not written yet, rotated away, unreadable: nothing to show
        return b"", True
