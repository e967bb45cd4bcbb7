"""The adaptive batch size: grows while the queue is deep and tasks are quick, else shrinks."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral.model.batches import next_batch_size


@pytest.mark.parametrize(
    ("current", "claimed", "mean_task_s", "expected"),
    [
        (1, 1, 0.0001, 2),  # a full batch of quick tasks: double
        (32, 32, 0.0001, 64),  # up to the most allowed
        (64, 64, 0.0001, 64),  # never past it
        (8, 3, 0.0001, 3),  # the queue gave less: what it gave
        (8, 0, None, 1),  # nothing at all: 1, so a lone task is taken at once
        (8, 8, 0.02, 5),  # slow tasks: as many as fit the window (0.1 s / 0.02 s)
        (4, 4, 1.0, 1),  # a task longer than the window: one at a time
        (2, 2, None, 4),  # duration unknown: double
    ],
)
def test_next_batch_size(
    current: int, claimed: int, mean_task_s: float | None, expected: int
) -> None:
    """Each case names the rule it checks."""
    got = next_batch_size(current, claimed, mean_task_s=mean_task_s, most=64, window_s=0.1)
    assert expected == got


def test_a_batch_of_one_stays_one() -> None:
    """most=1 (the default) is one task at a time, whatever the queue."""
    assert 1 == next_batch_size(1, 1, mean_task_s=0.0, most=1, window_s=0.1)
