"""`corral status` in one record: the orchestrator, the live workers, the queues, the reviews
waiting, the task counts, the tasks and runs waiting for a person, where tasks' work
ended (kept for a person, landed lately, counts over a day), and the processes finished
runs left behind on this host.

It lives with the pool because the last of these is found among this host's processes
(corral.runtime.pool.leftovers), not in the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from corral.foundation.durations import iso
from corral.foundation.settings import Settings
from corral.model.providers import ProviderState
from corral.model.queues import QueueStat
from corral.model.reviews import RECENT_WORK_S, WorkEnds
from corral.model.states import TaskStatus
from corral.model.tasks import Task, TaskFilter
from corral.model.workers import Worker
from corral.runtime.pool import leftovers
from corral.runtime.pool.leftovers import Leftover
from corral.runtime.pool.measured import measured
from corral.store import Store
from corral.usecases import orchestrators, queues, reviews, workers
from corral.usecases.orchestrators import OrchestratorReport
from corral.usecases.reviews import PendingReview

# The waiting tasks `status` lists by name (the oldest); the count says how many there are.
WAITING_SHOWN = 100
WORK_SHOWN = 20  # kept branches and landed tasks `status` lists by name, each


@dataclass(frozen=True, slots=True, kw_only=True)
class Overview:
    """Everything `corral status` shows, read at `orchestrator.now`."""

    orchestrator: OrchestratorReport
    workers: list[Worker]
    queues: list[QueueStat]
    reviews: list[PendingReview]
    tasks: dict[str, int]
    leftovers: list[Leftover]
    providers: list[ProviderState]
    waiting: list[dict[str, Any]]  # runs waiting for a person (store.runs.waiting_runs)
    waiting_tasks: list[Task]  # tasks waiting for a person, the oldest WAITING_SHOWN
    work: WorkEnds  # where tasks' work ended

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape of `corral status --json` (docs/cli.md)."""
        return {
            "orchestrator": self.orchestrator.to_dict(),
            "workers": [w.to_dict() for w in self.workers],
            "queues": [q.to_dict() for q in self.queues],
            "reviews": [r.to_dict() for r in self.reviews],
            "tasks": self.tasks,
            "leftovers": [leftover.to_dict() for leftover in self.leftovers],
            "providers": [p.to_dict() for p in self.providers],
            "waiting": self.waiting,
            "waiting_tasks": [
                {
                    "task_id": t.id,
                    "title": t.title,
                    "reason": t.wait_reason,
                    "since": iso(t.updated_at),
                }
                for t in self.waiting_tasks
            ],
            "work": self.work.to_dict(),
        }


def overview(store: Store, *, settings: Settings) -> Overview:
    """Read what `corral status` shows; reviews are stale past `worktree.review_stale_after`."""
    report = orchestrators.status(store, liveness=settings.liveness)
    since = report.now - timedelta(seconds=RECENT_WORK_S)
    return Overview(
        orchestrator=report,
        workers=measured(workers.live(store)),
        tasks=store.tasks.task_counts(),
        queues=queues.queue_stats(store),
        reviews=reviews.pending(store, stale_after_s=settings.worktree.review_stale_after_s),
        leftovers=leftovers.find(store.for_maintenance()),  # a run of any namespace
        providers=store.providers.provider_states(),
        waiting=store.runs.waiting_runs(),
        waiting_tasks=store.tasks.list_tasks(
            TaskFilter(statuses=(TaskStatus.WAITING,), limit=WAITING_SHOWN)
        ),
        work=store.reviews.work_ends(since=since, limit=WORK_SHOWN),
    )
