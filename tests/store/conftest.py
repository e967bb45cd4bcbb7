"""Helpers for the store conformance suite: enqueue, register and read events in one call.

Everything here goes through the use cases and the `Store` protocol only, so the suite
runs unchanged on every dialect in `STORE_DIALECTS`, and a third time on a store reached
over HTTP (`http`: a real `corral serve` app on loopback over SQLite, tests/served.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import STORE_DIALECTS, store_url

import corral
from corral import EventFilter, FakeClock, NewTask, NewWorker, Settings, Store, Task, Worker


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Leave out, over HTTP, what a remote store rightly does not have: a module saying
    `NOT_OVER_HTTP = "why"` (the driver's own tests), or a test named in its dict."""
    for item in items:
        if "[http" not in item.name:
            continue
        why = getattr(item.module, "NOT_OVER_HTTP", None)  # type: ignore[attr-defined]
        if isinstance(why, dict):
            why = why.get(getattr(item, "originalname", item.name))
        if why:
            item.add_marker(pytest.mark.skip(reason=f"not over HTTP: {why}"))


@pytest.fixture(params=[*STORE_DIALECTS, "http"])
def store(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Store]:
    """A fresh, migrated store of each dialect on the fake clock, and one over HTTP."""
    if request.param == "http":
        from tests.served import SERVED_LOCAL, serve

        local = corral.open_store(str(tmp_path / "corral.db"), clock=clock)
        remote, stop = serve(local)
        request.node.stash[SERVED_LOCAL] = local
        yield remote
        stop()
        return
    opened = corral.open_store(store_url(request.param, request, tmp_path), clock=clock)
    yield opened
    opened.close()


@pytest.fixture
def add(store: Store, settings: Settings) -> Callable[..., Task]:
    """Enqueue a task with the test settings; keyword arguments go to `NewTask`."""

    def add(title: str = "a task", **fields: Any) -> Task:
        return corral.enqueue(store, NewTask(title=title, **fields), settings=settings)

    return add


_PIDS = itertools.count(4242)


@pytest.fixture
def worker(store: Store, settings: Settings) -> Callable[..., Worker]:
    """Register a worker and, unless `beat=False`, heartbeat it once so it is idle."""

    def make(
        name: str = "w",
        *,
        kinds: tuple[str, ...] = (),
        queues: tuple[str, ...] = (),
        max_concurrent: int = 1,
        beat: bool = True,
        site: str | None = None,
    ) -> Worker:
        spec = NewWorker(
            name=name,
            hostname="test-host",
            pid=next(_PIDS),  # one live worker per (namespace, host, pid): each its own
            kinds=kinds,
            queues=queues,
            max_concurrent=max_concurrent,
            site=site,
        )
        registered = corral.register(store, spec, settings=settings).worker
        if not beat:
            return registered
        return corral.heartbeat(store, registered.id, settings=settings).worker

    return make


@pytest.fixture
def events(store: Store) -> Callable[..., list[str]]:
    """Names of the events recorded so far, oldest first, optionally for one task or worker."""

    def names(*, task_id: str | None = None, worker_id: str | None = None) -> list[str]:
        flt = EventFilter(task_id=task_id, worker_id=worker_id, limit=10_000)
        return [event.name for event in store.events.list_events(flt)]

    return names


@pytest.fixture
def silence(clock: FakeClock, settings: Settings) -> Callable[[int], None]:
    """Advance the clock until a silent worker has missed `n` heartbeats, and no further."""

    def advance(missed: int) -> None:
        clock.advance(settings.heartbeat_interval_s * (missed + 0.5))

    return advance
