"""Conformance: a review waiting past `review_stale_after` raises `review.stale` once."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

import corral
from corral import EventFilter, FakeClock, Settings, Store, Task, Worker
from corral.usecases import reviews

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]


@pytest.fixture
def short(settings: Settings) -> Settings:
    """The test settings with reviews stale after a minute."""
    return dataclasses.replace(settings, review_stale_after_s=60.0)


def _stale_events(store: Store, task_id: str) -> int:
    found = store.events.list_events(
        EventFilter(task_id=task_id, names=("review.stale",), limit=100)
    )
    return len(found)


def _in_review(store: Store, settings: Settings, add: Add, worker: MakeWorker) -> Task:
    task = add("reviewed", requires_review=True)
    claim = corral.claim(store, task.id, worker().id, settings=settings)
    return corral.complete(store, task.id, token=claim.token)


def test_a_stale_review_is_raised_once_across_passes(
    store: Store, clock: FakeClock, short: Settings, add: Add, worker: MakeWorker
) -> None:
    """Not before review_stale_after; then one event from the first pass, none from the next."""
    task = _in_review(store, short, add, worker)
    clock.advance(59)
    assert 0 == corral.reconcile_once(store, settings=short).reviews_stale
    clock.advance(2)
    reports = [corral.reconcile_once(store, settings=short) for _ in range(2)]
    assert [1, 0] == [r.reviews_stale for r in reports]
    assert 1 == _stale_events(store, task.id)


def test_two_concurrent_reconcilers_raise_it_once(
    store: Store, clock: FakeClock, short: Settings, add: Add, worker: MakeWorker
) -> None:
    """Two passes at once, in two threads: the mark's compare-and-set lets one raise it."""
    tasks = [_in_review(store, short, add, worker) for _ in range(3)]
    clock.advance(61)
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(corral.reconcile_once, store, settings=short) for _ in range(2)]
        counts = sorted(f.result().reviews_stale for f in futures)
    assert 3 == sum(counts)
    assert [1, 1, 1] == [_stale_events(store, t.id) for t in tasks]


def test_a_review_sent_back_and_submitted_again_may_go_stale_again(
    store: Store, clock: FakeClock, short: Settings, add: Add, worker: MakeWorker
) -> None:
    """Changes requested clear the mark: the next submission is a new review."""
    task = _in_review(store, short, add, worker)
    clock.advance(61)
    corral.reconcile_once(store, settings=short)
    reviews.request_changes(store, task.id, note="rename it")
    claim = corral.claim(store, task.id, worker("second").id, settings=short)
    corral.complete(store, task.id, token=claim.token)
    clock.advance(61)
    assert 1 == corral.reconcile_once(store, settings=short).reviews_stale
    assert 2 == _stale_events(store, task.id)
