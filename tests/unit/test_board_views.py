"""Seed 001's views of corral's records (board/model/columns.py, board/model/heartbeats.py):
pure maps, table-tested without a store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from corral import InvalidInput, TaskStatus, Worker, WorkerStatus
from corral.board.model.columns import ON_BOARD, SHOWN, BoardStatus, board_status, corral_statuses
from corral.board.model.heartbeats import heartbeats

T0 = datetime(2026, 2, 12, tzinfo=UTC)


def test_every_corral_state_has_a_place_on_the_board() -> None:
    """A state added to corral without a board word would fail every seed view: none is."""
    assert set(TaskStatus) == set(ON_BOARD)
    assert set(SHOWN) == set(ON_BOARD.values())


@pytest.mark.parametrize(
    ("shown", "states"),
    [
        ("todo", {TaskStatus.BLOCKED, TaskStatus.READY}),
        ("in-progress", {TaskStatus.RUNNING}),
        ("review", {TaskStatus.IN_REVIEW, TaskStatus.APPROVED}),
        ("done", {TaskStatus.DONE}),
        ("blocked", {TaskStatus.FAILED, TaskStatus.WAITING}),
        ("cancelled", {TaskStatus.CANCELLED}),
    ],
)
def test_a_board_word_filters_on_the_states_it_shows(shown: str, states: set[TaskStatus]) -> None:
    """The list filter `status=WORD` is exactly the states shown as WORD."""
    assert states == set(corral_statuses(shown))


@pytest.mark.parametrize("raw", ["ready", "cancelled", "In-Progress", 7, None, ""])
def test_a_patch_names_one_of_the_five_columns(raw: Any) -> None:
    """Only the seed's five words move a task; corral's own words and other values do not."""
    with pytest.raises(InvalidInput) as caught:
        board_status(raw)
    assert "status" == caught.value.field
    assert BoardStatus.IN_PROGRESS is board_status("in-progress")


def _worker(name: str, host: str, minutes: int, **fields: Any) -> Worker:
    at = T0 + timedelta(minutes=minutes)
    base: dict[str, Any] = {
        "id": f"w-{name}{host}{minutes}",
        "name": name,
        "hostname": host,
        "pid": 100 + minutes,
        "version": "1.0.0",
        "queues": (),
        "kinds": (),
        "max_concurrent": 1,
        "labels": {},
        "status": WorkerStatus.IDLE,
        "registered_at": at,
        "last_heartbeat_at": at,
        "active": 0,
        "completed_total": 0,
        "failed_total": 0,
        "offline_reason": None,
        "cpu_percent": None,
        "rss_bytes": None,
    }
    return Worker(**{**base, **fields})


def test_a_slot_is_its_newest_worker_and_a_name_on_two_hosts_is_two_slots() -> None:
    """Incarnations of one name on one host are one slot (restartCount: those before the
    newest); the same name on another host is keyed name@host; dead is offline."""
    beats = heartbeats(
        [
            _worker("slot-1", "a", 2, status=WorkerStatus.STALE),
            _worker("slot-1", "a", 0, status=WorkerStatus.DEAD, offline_reason="missed"),
            _worker("slot-1", "b", 1, status=WorkerStatus.DEAD),
            _worker("slot-2", "a", 1, status=WorkerStatus.DRAINING, active=1),
        ],
        [],
        {},
    )
    assert {
        "slot-1@a": ("idle", 1, "stale", 102),
        "slot-1@b": ("offline", 0, "dead", None),
        "slot-2": ("working", 0, "draining", 101),
    } == {
        slot: (
            b["status"],
            b["metadata"]["restartCount"],
            b["metadata"]["corralStatus"],
            b["metadata"]["workerPid"],
        )
        for slot, b in beats.items()
    }
    assert "dead" == beats["slot-1@b"]["metadata"]["offlineReason"]
    assert None is beats["slot-2"]["task"]  # its claim was not among those read
