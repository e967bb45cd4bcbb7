"""Runners that lose their worker, their claims or their store, as users run them: real
`corral worker start` processes, real signals, a real store."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from tests.runtime.conftest import wait_until
from tests.runtime.test_runner import Harness, _kill_run_processes

import corral
from corral import NewTask, TaskStatus


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    """A harness whose processes are all gone after the test, retries without jitter."""
    harness = Harness(tmp_path)
    harness.env["CORRAL_RETRY_JITTER"] = "0"
    yield harness
    harness.close()


def test_a_task_whose_runner_was_killed_runs_again_at_once_then_backs_off(h: Harness) -> None:
    """kill -9 of its runner: the task is claimable at once (the first crash); after a
    second crash it waits for the retry backoff."""
    hang = h.script("hang.sh", "sleep 300\n")
    spec = NewTask(title="a task", max_attempts=5)
    task_id = corral.enqueue(h.store, spec, settings=corral.Settings(retry_base_s=10)).id
    seen: list[str] = []
    for _ in range(2):
        # A runner restarted under the same name recovers its dead incarnation at once.
        runner = h.start("--exec", hang)
        wait_until(
            lambda: any(r.id not in seen and r.finished_at is None for r in h.runs(task_id)), 10
        )
        run = next(r for r in h.runs(task_id) if r.finished_at is None)
        seen.append(run.id)
        runner.kill()
        runner.wait()
        _kill_run_processes(run.id)
    assert 0 == h.start("--exec", "true", "--once").wait(30)
    task = h.task(task_id)
    assert (TaskStatus.READY, 2, 2) == (task.status, task.crashes, len(h.runs(task_id)))
    assert task.run_after is not None
    assert task.run_after - h.store.now() > timedelta(seconds=5)
