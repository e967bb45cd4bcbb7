"""The exchange's pure decisions: the adaptive batch size (grows while the queue is deep and
tasks are quick, else shrinks) and where a completion takes its task."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral.model.exchange import COMPLETED_TO, completed_to, next_batch_size
from corral.model.states import TaskStatus


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


def test_a_completion_goes_to_review_only_when_the_task_requires_it() -> None:
    """requires_review: in_review; else done. The dialects' table is indexed by it (0, 1)."""
    assert TaskStatus.IN_REVIEW == completed_to(requires_review=True)
    assert TaskStatus.DONE == completed_to(requires_review=False)
    assert (TaskStatus.DONE, TaskStatus.IN_REVIEW) == COMPLETED_TO
