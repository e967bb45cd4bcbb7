"""Which events `[notify] command` (and `url`) is run for (runtime/pool/notify.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from corral import InvalidInput
from corral.model.events import Event
from corral.runtime.pool.notify import (
    NOTICE_KINDS,
    DeadNotices,
    NoticeFilter,
    checked_kinds,
    notice_of,
    notify_argv,
    payload_of,
)


def _event(name: str, to_status: str | None = None, data: dict | None = None) -> Event:
    return Event(
        id=1,
        at=datetime(2026, 11, 26, tzinfo=UTC),
        name=name,
        task_id="t-1",
        worker_id=None,
        token=7,
        from_status=None,
        to_status=to_status,
        actor="t",
        reason=None,
        data=data or {},
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
        ("worker.dead", "dead", "worker.dead"),
        ("worker.stale", "stale", None),  # it may yet beat again
        ("task.claimed", "running", None),
    ],
)
def test_only_what_needs_a_person_is_a_notice(
    name: str, to_status: str | None, notice: str | None
) -> None:
    assert notice == notice_of(_event(name, to_status))


def test_an_account_unparked_is_a_notice_and_its_other_settings_are_not() -> None:
    unparked = {"provider": "claude", "max_running": None, "paused": False, "unparked": True}
    assert "provider.unparked" == notice_of(_event("provider.set", data=unparked))
    assert None is notice_of(_event("provider.set", data={**unparked, "unparked": False}))


def test_a_notice_carries_the_events_shape_without_its_claim_token() -> None:
    ev = _event("task.failed", "failed")
    assert {**ev.to_dict()} == {**payload_of(ev), "token": 7}
    assert "token" not in payload_of(ev)


def test_notify_events_names_kinds_of_notice() -> None:
    """Every kind is taken; anything else is refused naming the key and the value."""
    assert NOTICE_KINDS == checked_kinds(NOTICE_KINDS)
    with pytest.raises(InvalidInput, match=r"notify\.events: expected kinds among .*task\.done"):
        checked_kinds(("task.failed", "task.done"))


@pytest.mark.parametrize(
    ("only", "kind", "namespace", "queue", "admitted"),
    [
        (NoticeFilter(), "task.failed", "default", "q", True),
        (NoticeFilter(kinds=("task.failed",)), "task.waiting", "default", "q", False),
        (NoticeFilter(namespaces=("ops",)), "task.failed", "default", "q", False),
        (NoticeFilter(namespaces=("ops",)), "task.failed", "ops", "q", True),
        (NoticeFilter(queues=("ops",)), "task.failed", "default", "q", False),
        (NoticeFilter(queues=("ops",)), "task.failed", "default", "ops", True),
        (NoticeFilter(queues=("ops",)), "worker.dead", "default", None, True),  # no task
    ],
)
def test_a_filter_lets_out_what_it_names(
    only: NoticeFilter, kind: str, namespace: str, queue: str | None, admitted: bool
) -> None:
    assert admitted == only.admits(kind, namespace, lambda: queue)


def test_a_filter_without_queues_never_reads_a_tasks_queue() -> None:
    def unread() -> str:
        raise AssertionError("read")

    assert NoticeFilter(kinds=("task.failed",)).admits("task.failed", "default", unread)


def test_a_notify_command_is_checked_like_exec() -> None:
    """Split like --exec, never by a shell; empty or unbalanced: InvalidInput."""
    assert ("notify-send", "corral says") == notify_argv("notify-send 'corral says'")
    for bad in ("", "say 'unbalanced"):
        with pytest.raises(InvalidInput, match=r"notify\.command"):
            notify_argv(bad)


def test_a_worker_name_is_told_dead_once_per_window_with_the_deaths_held_back() -> None:
    """`[notify] dead_every` = 60 s: a name's deaths within 60 s of its last notice are held
    back and counted in its next; another name is told at once."""
    dead = DeadNotices(60.0)
    assert 0 == dead.admit("slot-1", 0.0)
    assert None is dead.admit("slot-1", 10.0)
    assert None is dead.admit("slot-1", 59.9)
    assert 0 == dead.admit("slot-2", 20.0)
    assert 2 == dead.admit("slot-1", 60.0)
    assert None is dead.admit("slot-1", 61.0)
    assert 1 == dead.admit("slot-1", 200.0)
    assert 0 == DeadNotices(0.0).admit("slot-1", 0.0) == DeadNotices(0.0).admit("slot-1", 0.0)
