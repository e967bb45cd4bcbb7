"""The leading orchestrator's retention pass, every `retention.interval`."""

from __future__ import annotations

from tests.runtime.conftest import Pool, wait_until

from corral.model.states import TaskStatus
from corral.model.tasks import TaskFilter


def test_the_leading_orchestrator_prunes_on_its_interval(pool: Pool) -> None:
    pool.env.update(CORRAL_RETENTION_FINISHED_AFTER_S="0.001", CORRAL_RETENTION_INTERVAL_S="1")
    ids = set(pool.add(2))

    def listed() -> dict[str, TaskStatus]:
        return {t.id: t.status for t in pool.store.tasks.list_tasks(TaskFilter(limit=100))}

    pool.start(workers=1)
    pool.wait(lambda: all(listed().get(t, TaskStatus.DONE) is TaskStatus.DONE for t in ids))
    wait_until(lambda: not ids & set(listed()), 15)
    wait_until(lambda: "retention.pruned" in pool.log(), 10)  # logged once the pass returns
