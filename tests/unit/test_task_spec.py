"""Task specs, the transition table, and the task record's JSON shape."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral.foundation.errors import InvalidInput
from corral.model.states import ALLOWED_FROM, FINAL, TaskStatus
from corral.model.tasks import NewTask, check_name


def test_a_minimal_spec_takes_the_defaults() -> None:
    """Only a title is needed; queue and kind default to `default`."""
    spec = NewTask(title="Fix it")
    assert ("default", "default", 0, (), None, False) == (
        spec.queue,
        spec.kind,
        spec.priority,
        spec.depends_on,
        spec.assignee,
        spec.requires_review,
    )


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"title": ""}, "title"),
        ({"title": "   "}, "title"),
        ({"title": "x" * 501}, "title"),
        ({"priority": "5"}, "priority"),
        ({"priority": 1.5}, "priority"),
        ({"priority": True}, "priority"),
        ({"payload": [1, 2]}, "payload"),
        ({"max_attempts": 0}, "max_attempts"),
        ({"timeout_s": 0}, "timeout"),
        ({"timeout_s": -5}, "timeout"),
        ({"depends_on": ("t-a", "t-b", "t-a")}, "depends_on"),
        ({"queue": ""}, "queue"),
        ({"queue": "two words"}, "queue"),
        ({"kind": "x" * 101}, "kind"),
        ({"kind": "bell\a"}, "kind"),
        ({"priority": 2**31}, "priority"),
        ({"priority": -(2**31) - 1}, "priority"),
        ({"priority": 10**20}, "priority"),
        ({"max_attempts": 2**31}, "max_attempts"),
        ({"timeout_s": 1e12}, "timeout"),
        ({"timeout_s": float("nan")}, "timeout"),
        ({"run_after_s": 1e12}, "run_after"),
        ({"run_after_s": float("inf")}, "run_after"),
    ],
)
def test_bad_specs_raise_invalid_input_naming_the_field(
    fields: dict[str, object], field: str
) -> None:
    """NewTask refuses bad input on construction, naming the field."""
    values = {"title": "t", **fields}
    with pytest.raises(InvalidInput, match=f"^{field}: expected") as caught:
        NewTask(**values)  # type: ignore[arg-type]
    assert field == caught.value.field


def test_the_extremes_of_each_range_are_accepted() -> None:
    """32-bit priorities and attempt counts, and spans up to a century, are valid."""
    NewTask(title="t", priority=2**31 - 1, max_attempts=2**31 - 1, timeout_s=3.1e9)
    NewTask(title="t", priority=-(2**31), run_after_s=3.1e9)


def test_check_name_accepts_short_printable_names() -> None:
    """Names with dashes, dots and colons are fine."""
    for name in ("code", "review-2", "q.high", "team:infra", "x" * 100):
        check_name("queue", name)


def test_the_transition_table() -> None:
    """The one copy of the state machine: who may do what from where."""
    assert {
        "claim": {TaskStatus.READY},
        "renew": {TaskStatus.RUNNING},
        "release": {TaskStatus.RUNNING},
        "defer": {TaskStatus.RUNNING},
        "complete": {TaskStatus.RUNNING},
        "fail": {TaskStatus.RUNNING},
        "recover": {TaskStatus.RUNNING},
        "unblock": {TaskStatus.BLOCKED},
        "block": {TaskStatus.READY, TaskStatus.BLOCKED},
        "cancel": {
            TaskStatus.BLOCKED,
            TaskStatus.READY,
            TaskStatus.RUNNING,
            TaskStatus.WAITING,
            TaskStatus.IN_REVIEW,
            TaskStatus.APPROVED,
        },
        "retry": {TaskStatus.FAILED, TaskStatus.CANCELLED, TaskStatus.WAITING},
        "wait": {TaskStatus.RUNNING},
        "answer": {TaskStatus.WAITING},
        "submit": {TaskStatus.RUNNING},
        "approve": {TaskStatus.IN_REVIEW},
        "request_changes": {TaskStatus.IN_REVIEW, TaskStatus.APPROVED},
        "merge": {TaskStatus.APPROVED},
        "merge_pr": {TaskStatus.IN_REVIEW, TaskStatus.APPROVED},
        "checks_failed": {TaskStatus.IN_REVIEW, TaskStatus.APPROVED},
        "land": {TaskStatus.DONE},
        "reprioritise": {
            TaskStatus.BLOCKED,
            TaskStatus.READY,
            TaskStatus.RUNNING,
            TaskStatus.WAITING,
            TaskStatus.IN_REVIEW,
            TaskStatus.APPROVED,
        },
    } == {action: set(states) for action, states in ALLOWED_FROM.items()}


def test_final_states() -> None:
    """done, failed and cancelled are final; nothing but retry (and a land of a done task's
    kept branch that conflicts) leaves them."""
    assert {TaskStatus.DONE, TaskStatus.FAILED, TaskStatus.CANCELLED} == set(FINAL)
    leaving_final = {a for a, states in ALLOWED_FROM.items() if states & FINAL}
    assert {"retry", "land"} == leaving_final


def test_statuses_are_stable_strings() -> None:
    """Task states serialise as the lower-case names the docs and JSON use."""
    assert [
        "blocked",
        "ready",
        "running",
        "waiting",
        "in_review",
        "approved",
        "done",
        "failed",
        "cancelled",
    ] == [str(s) for s in TaskStatus]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"parent_runs_first": True}, "parent_runs_first"),
        ({"parent_id": "t-p", "depends_on": ("t-p",)}, "depends_on"),
    ],
)
def test_parentage_a_spec_can_judge_alone_is_checked(fields: dict[str, object], field: str) -> None:
    """parent_runs_first needs a parent; a parent that waits for its child is not its dependency."""
    with pytest.raises(InvalidInput, match=f"^{field}: expected"):
        NewTask(title="t", **fields)  # type: ignore[arg-type]
