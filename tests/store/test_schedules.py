"""Conformance: schedules fire once per tick, catch up by their rules, pause, overlap, backfill.

Every test runs on SQLite, PostgreSQL and over HTTP, on the fake clock (2030-01-01 UTC).
"""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import corral
from corral import FakeClock, InvalidInput, NotFound, Refused, Settings, Store, TaskStatus, Worker
from corral.model.cron import zone
from corral.model.schedules import FireOutcome, NewSchedule, Overlap, plan_fires
from corral.usecases.schedules import (
    add_schedule,
    backfill,
    fire_due,
    pause,
    remove,
    resume,
    trigger,
)

MakeWorker = Callable[..., Worker]
START = datetime(2030, 1, 1, tzinfo=UTC)


def _add(store: Store, settings: Settings, schedule_id: str = "s", **fields: Any) -> Any:
    fields.setdefault("cron", "0 * * * * *")  # every minute, at second 0
    fields.setdefault("template", {"title": f"{schedule_id} tick", "kind": "code"})
    return add_schedule(store, NewSchedule(id=schedule_id, **fields), settings=settings)


def _created(store: Store, schedule_id: str = "s") -> list[datetime]:
    fires = store.schedules.schedule_fires(schedule_id, 100_000)
    return sorted(f.fire_at for f in fires if f.outcome is FireOutcome.CREATED)


def _minutes(first: int, last: int) -> list[datetime]:
    return [START + timedelta(minutes=m) for m in range(first, last + 1)]


def test_each_minute_fires_once_with_a_task_carrying_the_template_and_its_fire(
    store: Store, settings: Settings, clock: FakeClock
) -> None:
    """Passes every 20 s for 3 minutes make one fire per minute; each task is the template's,
    labelled with its schedule and fire time."""
    added = _add(store, settings, overlap=Overlap.ALLOW)
    assert START + timedelta(minutes=1) == added.next_fire_at
    for _ in range(9):
        clock.advance(20)
        fire_due(store, settings=settings)
    assert _minutes(1, 3) == _created(store)
    fires = store.schedules.schedule_fires("s", 10)
    task = store.tasks.get_task(fires[0].task_id or "")
    assert ("s tick", "code", TaskStatus.READY) == (task.title, task.kind, task.status)
    assert {"schedule_id": "s", "fire_at": "2030-01-01T00:03:00+00:00"} == task.labels
    assert "schedule:s:2030-01-01T00:03:00Z" == fires[0].key
    assert START + timedelta(minutes=4) == store.schedules.get_schedule("s").next_fire_at


def test_two_passes_planned_from_one_read_make_each_fire_once(
    store: Store, settings: Settings, clock: FakeClock
) -> None:
    """Two schedulers that read the same due schedule both apply: the second's compare-and-set
    finds it handled and makes nothing."""
    _add(store, settings, overlap=Overlap.ALLOW)
    clock.advance(150)
    due = store.schedules.due_schedules(10)
    plans = [plan_fires(s, store.now()) for s in due]
    first = store.schedules.apply_fire_plans(plans, max_attempts=3, retry_base_s=1, actor="a")
    second = store.schedules.apply_fire_plans(plans, max_attempts=3, retry_base_s=1, actor="b")
    assert (2, 0) == (len(first), len(second))
    assert _minutes(1, 2) == _created(store)


def test_a_week_of_downtime_catches_up_at_most_max_catchup_within_the_window(
    store: Store, settings: Settings, clock: FakeClock
) -> None:
    """After 7 days down, an every-minute schedule with max_catchup 100 and a window of a day
    makes the newest 100 fires, oldest first; `show` says what was not caught up and why."""
    _add(store, settings, max_catchup=100, catchup_window_s=86400, overlap=Overlap.ALLOW)
    clock.advance(7 * 86400 + 30)
    report = fire_due(store, settings=settings)
    assert (100, 1) == (report.created, report.missed)
    now = START + timedelta(days=7)
    assert [now - timedelta(minutes=99 - m) for m in range(100)] == _created(store)
    (missed,) = [
        f for f in store.schedules.schedule_fires("s", 1000) if f.outcome is FireOutcome.MISSED
    ]
    assert now - timedelta(minutes=100) == missed.fire_at
    assert "2030-01-01T00:01:00+00:00 to 2030-01-07T22:20:00+00:00" in (missed.note or "")
    assert "more than max_catchup (100)" in (missed.note or "")
    assert now + timedelta(minutes=1) == store.schedules.get_schedule("s").next_fire_at


def test_downtime_beyond_the_window_catches_up_only_the_window(
    store: Store, settings: Settings, clock: FakeClock
) -> None:
    """An hourly schedule down for a week with a day's window makes the last day's 24 fires;
    the older ones are recorded as older than the window."""
    _add(store, settings, cron="0 0 * * * *", catchup_window_s=86400, overlap=Overlap.ALLOW)
    clock.advance(7 * 86400 + 30)
    fire_due(store, settings=settings)
    created = _created(store)
    assert 24 == len(created)
    assert START + timedelta(days=6, hours=1) == created[0]
    (missed,) = [
        f for f in store.schedules.schedule_fires("s", 1000) if f.outcome is FireOutcome.MISSED
    ]
    assert "older than the catch-up window (1d)" in (missed.note or "")


def test_pause_stops_fires_and_resume_catches_up_by_default(
    store: Store, settings: Settings, clock: FakeClock
) -> None:
    """Paused for 5 minutes, then resumed: the missed minutes are made at the next pass."""
    _add(store, settings, overlap=Overlap.ALLOW)
    paused = pause(store, "s", note="release freeze")
    assert (True, "release freeze") == (paused.paused, paused.pause_note)
    clock.advance(5 * 60 + 30)
    fire_due(store, settings=settings)
    assert [] == _created(store)
    with pytest.raises(Refused):
        pause(store, "s")
    resume(store, "s")
    fire_due(store, settings=settings)
    assert _minutes(1, 5) == _created(store)


def test_resume_skip_missed_moves_on_without_the_missed_fires(
    store: Store, settings: Settings, clock: FakeClock
) -> None:
    """`--skip-missed`: nothing of the pause is made, it is recorded, and the next minute fires."""
    _add(store, settings, overlap=Overlap.ALLOW)
    pause(store, "s")
    clock.advance(5 * 60 + 30)
    resumed = resume(store, "s", skip_missed=True)
    assert START + timedelta(minutes=6) == resumed.next_fire_at
    fire_due(store, settings=settings)
    assert [] == _created(store)
    (missed,) = store.schedules.schedule_fires("s", 10)
    assert (FireOutcome.MISSED, True) == (missed.outcome, "--skip-missed" in (missed.note or ""))
    clock.advance(60)
    fire_due(store, settings=settings)
    assert [START + timedelta(minutes=6)] == _created(store)
    with pytest.raises(Refused):
        resume(store, "s")


@pytest.mark.parametrize(
    ("overlap", "expected"),
    [
        (Overlap.SKIP, ["created", "skipped", "skipped", "created"]),
        (Overlap.BUFFER_ONE, ["created", "created", "skipped", "created"]),
        (Overlap.ALLOW, ["created", "created", "created", "created"]),
    ],
)
def test_overlap_policies_while_the_previous_task_is_unfinished(
    store: Store,
    settings: Settings,
    clock: FakeClock,
    worker: MakeWorker,
    overlap: Overlap,
    expected: list[str],
) -> None:
    """Minute 1's task is claimed (running): skip skips minutes 2 and 3; buffer-one makes
    minute 2 (one waiting) and skips 3; allow makes all; once it is done, minute 4 fires."""
    _add(store, settings, overlap=overlap)
    w = worker(kinds=("code",))
    clock.advance(60)
    fire_due(store, settings=settings)
    (first,) = store.schedules.schedule_fires("s", 1)
    claim = corral.claim(store, first.task_id or "", w.id, settings=settings)
    for _ in range(2):
        clock.advance(60)
        fire_due(store, settings=settings)
    corral.complete(store, first.task_id or "", token=claim.token)
    for task in store.tasks.ready_tasks(queue=None, kinds=(), limit=10):
        corral.cancel(store, task.id)
    clock.advance(60)
    fire_due(store, settings=settings)
    fires = sorted(store.schedules.schedule_fires("s", 10), key=lambda f: f.fire_at)
    assert expected == [str(f.outcome) for f in fires]


def test_backfill_twice_makes_each_fire_once(store: Store, settings: Settings) -> None:
    """Every time in (from, to] is made by the first backfill; the second makes none."""
    _add(store, settings, cron="0 0 * * * *")
    after, until = datetime(2029, 12, 1, tzinfo=UTC), datetime(2029, 12, 1, 5, tzinfo=UTC)
    made = backfill(store, "s", after=after, until=until, settings=settings)
    again = backfill(store, "s", after=after, until=until, settings=settings)
    assert [after + timedelta(hours=h) for h in range(1, 6)] == [f.fire_at for f in made]
    assert [] == again
    assert 5 == len(_created(store))


def test_backfill_refuses_an_empty_or_huge_range(store: Store, settings: Settings) -> None:
    """`to` before `from`, or more than 10,000 fires: refused, nothing made."""
    _add(store, settings, cron="* * * * * *")
    with pytest.raises(InvalidInput, match=r"^to: "):
        backfill(store, "s", after=START, until=START - timedelta(1), settings=settings)
    with pytest.raises(InvalidInput, match="at most 10000 fires"):
        backfill(store, "s", after=START, until=START + timedelta(days=1), settings=settings)
    assert [] == store.schedules.schedule_fires("s", 10)


def test_trigger_fires_now_outside_the_cron_once_a_second(
    store: Store, settings: Settings, clock: FakeClock
) -> None:
    """`trigger` makes a fire at the current second whatever the overlap; again in the same
    second is refused."""
    _add(store, settings, cron="0 0 0 1 1 *")
    clock.advance(12.5)
    fire = trigger(store, "s", settings=settings)
    assert ("schedule:s:2030-01-01T00:00:12Z", FireOutcome.CREATED) == (fire.key, fire.outcome)
    with pytest.raises(Refused):
        trigger(store, "s", settings=settings)
    clock.advance(1)
    assert FireOutcome.CREATED == trigger(store, "s", settings=settings).outcome


@pytest.mark.parametrize(
    ("zone_name", "cron", "start", "expected"),
    [
        # Spring in Paris: 02:30 does not exist on 03-31; it fires once, at the gap's end.
        (
            "Europe/Paris",
            "0 30 2 * * *",
            datetime(2030, 3, 29, 12, tzinfo=UTC),
            ["03-30 02:30", "03-31 03:00", "04-01 02:30"],
        ),
        # Autumn in New York: 01:30 happens twice on 11-03; it fires once, the first time.
        (
            "America/New_York",
            "0 30 1 * * *",
            datetime(2030, 11, 1, 12, tzinfo=UTC),
            ["11-02 01:30", "11-03 01:30", "11-04 01:30"],
        ),
    ],
)
def test_fires_over_a_dst_change_follow_the_wall_clock(
    store: Store,
    settings: Settings,
    clock: FakeClock,
    zone_name: str,
    cron: str,
    start: datetime,
    expected: list[str],
) -> None:
    """A daily local time, passes every 12 hours over a change: one fire a day, the gap's at
    its end, the repeat's at its first occurrence."""
    clock.advance((start - START).total_seconds())
    _add(store, settings, cron=cron, timezone=zone_name, overlap=Overlap.ALLOW)
    for _ in range(6):
        clock.advance(12 * 3600)
        fire_due(store, settings=settings)
    local = [at.astimezone(zone(zone_name)) for at in _created(store)]
    assert expected == [at.strftime("%m-%d %H:%M") for at in local]
    first_repeat = [at for at in local if at.strftime("%m-%d") == "11-03"]
    assert all(at.fold == 0 and at.utcoffset() == timedelta(hours=-4) for at in first_repeat)


def test_a_pass_makes_at_most_max_fires_and_leaves_the_rest_for_the_next(
    store: Store, settings: Settings, clock: FakeClock
) -> None:
    """With scheduler_max_fires 5, three schedules due 3 fires each take three passes: a
    schedule's fires are never split, and one that would pass the cap waits its turn."""
    for name in ("a", "b", "c"):
        _add(store, settings, name, overlap=Overlap.ALLOW)
    clock.advance(3 * 60 + 1)
    small = Settings(scheduler_max_fires=5, scheduler_batch_size=2)
    assert 3 == fire_due(store, settings=small).created
    assert 3 == fire_due(store, settings=small).created
    assert 3 == fire_due(store, settings=small).created
    assert 0 == fire_due(store, settings=small).created


def test_a_schedule_is_listed_with_its_last_task_and_removed_with_its_fires(
    store: Store, settings: Settings, clock: FakeClock
) -> None:
    """`list` shows the last fire and its task's status; `remove` leaves the tasks."""
    _add(store, settings, "b")
    _add(store, settings, "a")
    with pytest.raises(Refused, match="exists already"):
        _add(store, settings, "a")
    clock.advance(61)
    fire_due(store, settings=settings)
    listed = store.schedules.list_schedules()
    assert ["a", "b"] == [s.id for s in listed]
    assert (START + timedelta(minutes=1), TaskStatus.READY) == (
        listed[0].last_fire_at,
        listed[0].last_task_status,
    )
    task_id = listed[0].last_task_id or ""
    remove(store, "a")
    with pytest.raises(NotFound):
        store.schedules.get_schedule("a")
    assert [] == store.schedules.schedule_fires("a", 10)
    assert TaskStatus.READY == store.tasks.get_task(task_id).status
