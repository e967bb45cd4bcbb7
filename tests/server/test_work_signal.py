"""The server's work signal stops whole: a stop racing its threads' waits leaves none behind.

Each of its threads waits on an event that `stop` sets; a thread that cleared its event
just after `stop` set it used to wait on (the due-time thread up to DUE_CHECK_S, the
SQLite poll for good), so a server's shutdown took a second longer (its join's timeout)
and left a thread behind. A hundred start-stop cycles meet that interleaving many times
over (it showed on about one stop in fifty of the conformance suite's servers).
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from corral import Store, open_store
from corral.server.work_signal import WorkSignal


@pytest.fixture
def sqlite_store(tmp_path: Path):  # type: ignore[no-untyped-def]
    store = open_store(str(tmp_path / "corral.db"))
    yield store
    store.close()


def test_every_thread_has_ended_when_stop_returns(sqlite_store: Store) -> None:
    """Started and stopped a hundred times, some stops right after a waiter came and went:
    after each stop, none of the signal's threads is still alive."""

    async def cycle(wait_first: bool) -> list[str]:
        signal = WorkSignal()
        signal.start(sqlite_store)
        if wait_first:  # a claim waited: the threads are past their first wait
            await signal.wait(signal.generation, 0.001)
        await asyncio.to_thread(signal.stop)
        return [t.name for t in signal._threads if t.is_alive()]

    # On a thread of its own: this process's main thread may hold another test's running
    # event loop (Playwright's), where asyncio.run refuses to start.
    with ThreadPoolExecutor(1) as thread:
        for n in range(100):
            alive = thread.submit(lambda n=n: asyncio.run(cycle(wait_first=n % 2 == 1)))
            assert [] == alive.result(), n
