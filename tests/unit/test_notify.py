"""Which events `[notify] command` (and `url`) is run for (runtime/pool/notify.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from corral import InvalidInput
from corral.model.events import Event
from corral.runtime.pool.notify import notice_of, notify_argv


def _event(name: str, to_status: str | None = None) -> Event:
    return Event(
        id=1,
        at=datetime(2026, 11, 26, tzinfo=UTC),
        name=name,
        task_id="t-1",
        worker_id=None,
        token=None,
        from_status=None,
        to_status=to_status,
        actor="t",
        reason=None,
        data={},
    )


@pytest.mark.parametrize(
    ("name", "to_status", "notice"),
    [
        ("task.failed", "failed", "task.failed"),
        ("task.waiting", "waiting", "task.waiting"),
        ("run.waiting", None, "run.waiting"),
        ("task.answered", "ready", None),  # a person acted: nobody else is needed
        ("provider.parked", None, "provider.parked"),
        ("review.stale", None, "review.stale"),
        ("task.pr_closed", None, "task.pr_closed"),  # closed unmerged: a person decides
        ("task.pr_merged", "done", None),  # landed: nobody is needed
        ("task.submitted", "in_review", "review.requested"),
        ("task.completed", "in_review", "review.requested"),
        ("task.completed", "done", None),  # done needs nobody
        ("task.retry_scheduled", "ready", None),  # a retry is not news
        ("run.finished", None, None),  # nor is a turn
    ],
)
def test_only_what_needs_a_person_is_a_notice(
    name: str, to_status: str | None, notice: str | None
) -> None:
    assert notice == notice_of(_event(name, to_status))


def test_a_notify_command_is_checked_like_exec() -> None:
    """Split like --exec, never by a shell; empty or unbalanced: InvalidInput."""
    assert ("notify-send", "corral says") == notify_argv("notify-send 'corral says'")
    for bad in ("", "say 'unbalanced"):
        with pytest.raises(InvalidInput, match=r"notify\.command"):
            notify_argv(bad)
