"""A run starts its command only under a claim still held then: a runner paused between
its claim and the start, declared dead meanwhile, starts nothing when it resumes."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.runtime.conftest import freeze_outside_a_write, wait_until
from tests.runtime.test_runner import Harness

import corral
from corral.model.runs import RunOutcome
from corral.model.workers import NewWorker

from .conftest import git


@pytest.fixture
def h(tmp_path: Path) -> Iterator[Harness]:
    """A harness whose folder is a git repository on `main`."""
    harness = Harness(tmp_path)
    git(tmp_path, "init", "--quiet", "-b", "main")
    (tmp_path / "README").write_text("hello\n")
    git(tmp_path, "add", "README")
    git(tmp_path, "commit", "--quiet", "-m", "initial")
    yield harness
    harness.close()


def test_a_runner_declared_dead_before_its_command_started_never_starts_it(h: Harness) -> None:
    """Paused in its worktree's setup, declared dead, its task claimed by another worker:
    resumed, the runner does not start the command, and the run says lease_lost, not killed."""
    gate, setting_up, started = h.tmp / "gate", h.tmp / "setting-up", h.tmp / "started"
    setup = f"while [ ! -e {gate} ]; do sleep 0.02; done"
    config = h.tmp / "config.toml"
    config.write_text(f"[worktree]\nsetup = \"sh -c 'touch {setting_up}; {setup}'\"\n")
    h.env["CORRAL_CONFIG"] = str(config)
    task_id = h.add()
    agent = h.script("agent.sh", f"touch {started}\n")
    runner = h.start("--exec", agent, "--worktree", "--workdir", str(h.tmp))
    wait_until(setting_up.exists, 20)
    freeze_outside_a_write(runner, h.db)
    settings = corral.Settings(heartbeat_interval_s=0.2, retry_base_s=0)
    try:
        wait_until(lambda: corral.reconcile_once(h.store, settings=settings).workers_dead == 1, 10)
        [run] = h.runs(task_id)
        other = corral.register(h.store, NewWorker(name="other"))
        claim = corral.claim(h.store, task_id, other.worker.id, settings=settings)
        gate.touch()
    finally:
        runner.send_signal(signal.SIGCONT)
    wait_until(lambda: h.log_has("run.not_started"), 20)
    wait_until(lambda: 3 == len(h.store.workers.list_workers()), 20)  # it registered again
    runner.send_signal(signal.SIGTERM)
    assert 0 == runner.wait(30)
    assert not started.exists()
    finished = h.store.runs.get_run(run.id)
    assert RunOutcome.LEASE_LOST == finished.outcome
    assert "before its run started" in (finished.error or "")
    assert claim.token == h.task(task_id).token  # the other worker's claim is untouched
