"""The runner's heartbeat measures the agent, not only itself: a real `corral worker start`
whose task starts a child that holds 60 MB and burns CPU shows that tree's memory and CPU
in its worker row, beside its own, on Linux's /proc path and on the portable (psutil) one;
the completed and failed deltas of its beats add up to what the store counted."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.runtime.conftest import wait_until
from tests.runtime.test_runner import Harness

from corral import Worker

HELD_BYTES = 60 << 20
# Holds HELD_BYTES resident and spins until the file $STOP exists.
BURN = (
    f"import os; held = b'x' * {HELD_BYTES}; stop = os.environ['STOP']\n"
    "while not os.path.exists(stop): pass\n"
)


@pytest.fixture(params=["proc", "portable"])
def h(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Harness]:
    """A harness whose runners take the /proc fast path, or the portable fallbacks."""
    harness = Harness(tmp_path)
    harness.env["STOP"] = str(tmp_path / "stop")
    if request.param == "portable":
        harness.env["CORRAL_PORTABLE"] = "1"
    yield harness
    harness.close()


def _worker(h: Harness) -> Worker | None:
    found = h.store.workers.list_workers()
    return found[0] if found else None


def test_the_heartbeat_carries_the_agent_trees_cpu_and_memory(h: Harness) -> None:
    """A task's child process (not the runner) burning CPU and holding 60 MB shows in the
    worker's agent figures; the runner's own stay its own; deltas add up to the totals."""
    (h.tmp / "burn.py").write_text(BURN)
    agent = h.script(
        "agent.sh",
        f'[ -e "{h.tmp}/fail" ] && exit 1\n{sys.executable} "{h.tmp}/burn.py" & wait\n',
    )
    h.start("--exec", agent)
    h.add("burn")

    def measured() -> bool:
        w = _worker(h)
        return (
            w is not None
            and (w.agent_rss_bytes or 0) >= HELD_BYTES
            and (w.agent_cpu_percent or 0) > 20
        )

    wait_until(measured, 30)
    w = _worker(h)
    assert w is not None and w.rss_bytes is not None and w.cpu_percent is not None
    assert w.rss_bytes < (w.agent_rss_bytes or 0)  # the runner is not the 60 MB
    assert 1 == w.reported_active
    (h.tmp / "stop").touch()
    wait_until(lambda: getattr(_worker(h), "reported_completed_total", 0) == 1, 30)
    (h.tmp / "fail").touch()
    h.add("fails", max_attempts=1)
    wait_until(lambda: getattr(_worker(h), "reported_failed_total", 0) == 1, 30)
    w = _worker(h)
    assert w is not None
    assert (w.completed_total, w.failed_total) == (
        w.reported_completed_total,
        w.reported_failed_total,
    )
    wait_until(lambda: getattr(_worker(h), "agent_rss_bytes", 0) is None, 10)  # none runs
