"""The portable fallbacks (corral.foundation.fastpaths), forced on Linux with `CORRAL_PORTABLE=1`:
what macOS would run. Commands start through Popen, a run's escaped processes are found by
scanning every process for its mark, exits are polled, and signals to workers go through
psutil instead of pidfds. The scenarios are the fast paths' own tests, run again here."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.runtime.conftest import Pool
from tests.runtime.test_control import (  # noqa: F401 - the fixture the test below needs
    store,
    test_a_local_runner_gets_sigterm_when_graceful_else_sigquit,
)
from tests.runtime.test_executor import (  # noqa: F401 - the fixtures the tests below need
    make_spec,
    run_id,
    test_a_command_ignoring_sigterm_is_killed_after_the_grace_period,
    test_background_processes_left_after_a_normal_exit_are_ended,
    test_exit_zero_captures_stdout_to_the_transcript,
    test_stop_ends_the_command_as_stopped,
    test_timeout_kills_the_whole_tree_including_setsid_escapees,
)
from tests.runtime.test_orchestrator import (
    test_a_killed_busy_worker_is_restarted_and_its_task_done_exactly_once,
    test_a_new_orchestrator_adopts_live_workers_and_restarts_dead_ones,
    test_a_stop_without_grace_gives_running_tasks_back_at_once,
    test_graceful_stop_lets_busy_workers_finish_and_leaves_nothing_running,
)

from corral.foundation import fastpaths
from corral.runtime.worker import proctree, spawn

__all__ = [
    "test_a_command_ignoring_sigterm_is_killed_after_the_grace_period",
    "test_a_killed_busy_worker_is_restarted_and_its_task_done_exactly_once",
    "test_a_local_runner_gets_sigterm_when_graceful_else_sigquit",
    "test_a_new_orchestrator_adopts_live_workers_and_restarts_dead_ones",
    "test_a_stop_without_grace_gives_running_tasks_back_at_once",
    "test_background_processes_left_after_a_normal_exit_are_ended",
    "test_exit_zero_captures_stdout_to_the_transcript",
    "test_graceful_stop_lets_busy_workers_finish_and_leaves_nothing_running",
    "test_stop_ends_the_command_as_stopped",
    "test_timeout_kills_the_whole_tree_including_setsid_escapees",
]

pytestmark = pytest.mark.usefixtures("portable")


@pytest.fixture
def portable(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """This process and every process it starts take the fallbacks. A test process that
    became a child subreaper in an earlier test (the fast path's) stops being one meanwhile,
    as a portable runner never is: orphans then go to init, not to a process that no longer
    reaps them."""
    monkeypatch.setenv(fastpaths.PORTABLE_ENV, "1")
    monkeypatch.setattr(spawn, "_FDS", None)  # read once, at import
    monkeypatch.setattr(proctree, "_state", {"on": False})
    was = _subreaper(None)
    _subreaper(False)
    yield
    _subreaper(was)


def _subreaper(on: bool | None) -> bool:
    """Whether this process is a child subreaper (prctl); set it first unless `on` is None."""
    libc = ctypes.CDLL(None, use_errno=True)
    if on is not None:
        libc.prctl(36, int(on), 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    flag = ctypes.c_int(0)
    libc.prctl(37, ctypes.byref(flag), 0, 0, 0)  # PR_GET_CHILD_SUBREAPER
    return bool(flag.value)


@pytest.fixture
def pool(tmp_path: Path) -> Iterator[Pool]:
    """The orchestrator harness, its processes on the fallbacks."""
    made = Pool(tmp_path)
    made.env[fastpaths.PORTABLE_ENV] = "1"
    try:
        yield made
    finally:
        made.close()


def test_the_fallbacks_are_the_ones_in_use(tmp_path: Path) -> None:
    assert None is fastpaths.pidfd_open(os.getpid())
    assert None is fastpaths.fd_listing()
    assert not fastpaths.subreaper_allowed() and not proctree.available()
    devnull = os.open(os.devnull, os.O_RDWR)
    try:
        child = spawn.start(
            (sys.executable, "-c", "pass"), env={}, cwd=os.getcwd(), stdio=(devnull,) * 3
        )
    finally:
        os.close(devnull)
    assert child.popen is not None  # Popen, not posix_spawn
    assert 0 == child.reap()
