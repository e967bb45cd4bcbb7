"""The rules of a parent taking a child (corral.model.subtasks), decided without a store."""

from __future__ import annotations

import pytest

from corral import InvalidInput, TaskStatus
from corral.model.subtasks import MAX_CHILDREN, MAX_DEPTH, check_parent


@pytest.mark.parametrize(
    ("status", "runs_first", "refusal"),
    [
        (TaskStatus.READY, False, None),
        (TaskStatus.BLOCKED, False, None),
        (TaskStatus.RUNNING, False, "a task that has not started"),
        (TaskStatus.IN_REVIEW, False, "a task that has not started"),
        (TaskStatus.RUNNING, True, None),
        (TaskStatus.APPROVED, True, None),
        (TaskStatus.DONE, True, "an unfinished task"),
        (TaskStatus.FAILED, False, "an unfinished task"),
        (TaskStatus.CANCELLED, True, "an unfinished task"),
    ],
)
def test_which_parents_take_which_children(
    status: TaskStatus, runs_first: bool, refusal: str | None
) -> None:
    """A waiting parent must not have started; one that runs first must not have finished."""
    if refusal is None:
        check_parent("t-p", status, depth=0, children=0, runs_first=runs_first)
        return
    with pytest.raises(InvalidInput, match=f"^parent: expected {refusal}"):
        check_parent("t-p", status, depth=0, children=0, runs_first=runs_first)


def test_depth_and_width_are_bounded() -> None:
    """The last level and the last child slot are taken; one more of either is refused."""
    check_parent("t-p", TaskStatus.READY, depth=MAX_DEPTH - 1, children=MAX_CHILDREN - 1,
                 runs_first=False)  # fmt: skip
    with pytest.raises(InvalidInput, match="levels deep"):
        check_parent("t-p", TaskStatus.READY, depth=MAX_DEPTH, children=0, runs_first=False)
    with pytest.raises(InvalidInput, match="children"):
        check_parent("t-p", TaskStatus.READY, depth=0, children=MAX_CHILDREN, runs_first=False)
