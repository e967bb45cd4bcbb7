"""Runners that lose their worker, their claims or their store, as users run them: real
`corral worker start` processes, real signals, a real store."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
from tests.runtime.conftest import freeze_outside_a_write, wait_until
from tests.runtime.test_runner import Harness, _kill_run_processes

import corral
from corral import EventFilter, NewTask, TaskStatus
from corral.model.runs import RunOutcome


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


def _gate_agent(h: Harness) -> tuple[str, Path]:
    """An agent that waits for its task's gate file (`gate-<task id>`), then succeeds."""
    agent = h.script(
        "gated.sh", f'while [ ! -e "{h.tmp}/gate-$CORRAL_TASK_ID" ]; do sleep 0.02; done\n'
    )
    return agent, h.tmp


def test_a_runner_declared_stale_keeps_its_claim_and_takes_the_next_task(h: Harness) -> None:
    """A reconcile pass marks the runner stale mid-task: its task finishes under its first
    claim, the store's refusal of its next claim is answered by a heartbeat, and the same
    worker claims and runs the next task instead of exiting."""
    agent, gates = _gate_agent(h)
    h.env["CORRAL_HEARTBEAT_INTERVAL_S"] = "2"  # the runner beats every 2 s ...
    first = h.add("first")
    runner = h.start("--exec", agent)
    run = h.wait_running(first)
    # ... while this reconciler takes 0.3 s of silence for stale (and never for dead).
    eager = corral.Settings(heartbeat_interval_s=0.2, dead_after_missed=1_000_000)
    wait_until(lambda: corral.reconcile_once(h.store, settings=eager).workers_stale == 1, 10)
    assert corral.WorkerStatus.STALE == h.store.workers.get_worker(run.worker_id).status
    second = h.add("second")
    (gates / f"gate-{first}").touch()
    (gates / f"gate-{second}").touch()
    wait_until(lambda: h.task(second).status is TaskStatus.DONE, 20)
    assert None is runner.poll()
    assert {run.worker_id} == {r.worker_id for r in h.runs(first) + h.runs(second)}
    assert [RunOutcome.DONE] == [r.outcome for r in h.runs(first)]
    runner.send_signal(signal.SIGTERM)
    assert 0 == runner.wait(30)


def test_a_runner_declared_dead_registers_again_and_its_old_token_stays_fenced(
    h: Harness,
) -> None:
    """Frozen past the dead window and reconciled: on resuming, the runner stops its task,
    registers a new worker under the same name, and runs the task again under a new claim;
    the old token is refused."""
    agent, gates = _gate_agent(h)
    task_id = h.add()
    runner = h.start("--exec", agent)
    old = h.wait_running(task_id, launched=True)
    runner.send_signal(signal.SIGSTOP)
    settings = corral.Settings(heartbeat_interval_s=0.2)
    try:
        wait_until(lambda: corral.reconcile_once(h.store, settings=settings).workers_dead == 1, 10)
    finally:
        runner.send_signal(signal.SIGCONT)
    wait_until(lambda: len(h.runs(task_id)) == 2, 10)
    new = h.runs(task_id)[1]
    assert new.worker_id != old.worker_id
    assert "w1" == h.store.workers.get_worker(new.worker_id).name
    (gates / f"gate-{task_id}").touch()
    wait_until(lambda: h.task(task_id).status is TaskStatus.DONE, 10)
    assert [RunOutcome.KILLED, RunOutcome.DONE] == [r.outcome for r in h.runs(task_id)]
    with pytest.raises(corral.StaleToken):
        corral.complete(h.store, task_id, token=old.token)
    assert None is runner.poll()
    runner.send_signal(signal.SIGTERM)
    assert 0 == runner.wait(30)
    assert not h.log_has("Traceback")


@pytest.mark.parametrize("how", ["killed", "declared_dead"])
def test_a_task_its_agent_completed_keeps_a_done_run_when_its_runner_then_dies(
    h: Harness, how: str
) -> None:
    """The agent runs `corral done` itself, then its runner is killed (or frozen and declared
    dead): the task is done under that token, and its run says done too, not killed."""
    task_id = h.add()
    runner = h.start(
        "--exec", h.script("agent.sh", 'corral done "$CORRAL_TASK_ID" >/dev/null\nsleep 300\n')
    )
    wait_until(lambda: h.task(task_id).status is TaskStatus.DONE, 10)
    if how == "killed":
        runner.send_signal(signal.SIGKILL)
    else:
        freeze_outside_a_write(runner, h.db)
    settings = corral.Settings(heartbeat_interval_s=0.2)
    try:
        wait_until(lambda: corral.reconcile_once(h.store, settings=settings).workers_dead == 1, 10)
    finally:
        runner.send_signal(signal.SIGCONT)
    [run] = h.runs(task_id)
    wait_until(lambda: h.store.runs.get_run(run.id).finished_at is not None, 10)
    assert (RunOutcome.DONE, None) == (
        h.store.runs.get_run(run.id).outcome,
        h.store.runs.get_run(run.id).error,
    )
    finished = [
        e.data
        for e in h.store.events.list_events(EventFilter(task_id=task_id))
        if e.name == "run.finished"
    ]
    assert [{"run_id": run.id, "outcome": "done", "exit_code": None}] == finished
    claims = [
        e.token
        for e in h.store.events.list_events(EventFilter(task_id=task_id))
        if e.name == "task.completed"
    ]
    assert [run.token] == claims
