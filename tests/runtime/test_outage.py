"""`Outage` (corral.runtime.pool.outage): an orchestrator's view of a store out, on a fake clock."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import logging
import random

import pytest

from corral import FakeClock
from corral.foundation.errors import StoreError
from corral.runtime.pool.outage import RETRY_MAX_S, RETRY_MIN_S, Outage

DOWN = StoreError("database x: no connection within 3 s")


def _outage(clock: FakeClock) -> Outage:
    return Outage(clock=clock, log=logging.getLogger("test.outage"), rng=random.Random(1))


def test_an_outage_is_logged_once_as_it_starts_and_once_with_its_length_as_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Five failures then a success: one `store.unreachable`, one `store.reachable` whose
    length runs from when the first failing call began."""
    clock = FakeClock()
    outage = _outage(clock)
    caplog.set_level(logging.INFO, "test.outage")
    assert False is outage.reached()
    began_at = clock.monotonic()
    clock.advance(10.0)  # the first failing call waited 10 s before it failed
    outage.failed(DOWN, began_at=began_at)
    for _ in range(4):
        clock.advance(1.0)
        outage.failed(DOWN, began_at=clock.monotonic())
    clock.advance(1.0)
    assert True is outage.ongoing
    assert True is outage.reached()
    assert False is outage.reached()
    assert [
        "store.unreachable error='database x: no connection within 3 s'",
        "store.reachable outage_s=15.0",
    ] == [r.getMessage() for r in caplog.records]


def test_the_probes_back_off_from_the_minimum_to_the_cap_with_jitter() -> None:
    """Each failure doubles the wait, up to RETRY_MAX_S; each wait is 0.5 to 1 times it."""
    clock = FakeClock()
    outage = _outage(clock)
    caps = []
    for _ in range(8):
        outage.failed(DOWN, began_at=clock.monotonic())
        waits = [outage.retry_s() for _ in range(50)]
        caps.append(max(waits))
        assert all(0.5 * caps[-1] <= w for w in waits)
    expected = [min(RETRY_MAX_S, RETRY_MIN_S * 2**n) for n in range(8)]
    assert all(e * 0.9 <= c <= e for e, c in zip(expected, caps, strict=True))
    assert RETRY_MAX_S >= max(caps)
