"""A day cap's day in `[budgets] day_zone` (model/budgets.py `day_start`, `next_day`):
counted from the zone's midnight, lifted at the next one, across daylight-saving changes
(a 23-hour and a 25-hour day, a zone whose clocks skip midnight itself); a zone that is no
zone refused naming its key."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from corral import InvalidInput, Settings
from corral.model.budgets import day_start, next_day

PARIS = ZoneInfo("Europe/Paris")
SANTIAGO = ZoneInfo("America/Santiago")  # clocks go from 00:00 to 01:00 on 2026-09-06


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


@pytest.mark.parametrize(
    ("now", "zone", "start", "lifts"),
    [
        (utc(2026, 11, 29, 15), UTC, utc(2026, 11, 29), utc(2026, 11, 30)),
        # Paris, winter: its day starts at 23:00 UTC the evening before.
        (utc(2026, 11, 29, 23, 30), PARIS, utc(2026, 11, 29, 23), utc(2026, 11, 30, 23)),
        # Spring forward (02:00 -> 03:00 on 2026-03-29): a 23-hour day.
        (utc(2026, 3, 29, 10), PARIS, utc(2026, 3, 28, 23), utc(2026, 3, 29, 22)),
        (utc(2026, 3, 28, 22, 59), PARIS, utc(2026, 3, 27, 23), utc(2026, 3, 28, 23)),
        # Fall back (03:00 -> 02:00 on 2026-10-25): a 25-hour day.
        (utc(2026, 10, 25, 1, 30), PARIS, utc(2026, 10, 24, 22), utc(2026, 10, 25, 23)),
        # Midnight itself skipped: the day starts at 01:00 local, its first instant.
        (utc(2026, 9, 6, 12), SANTIAGO, utc(2026, 9, 6, 4), utc(2026, 9, 7, 3)),
        (utc(2026, 9, 5, 12), SANTIAGO, utc(2026, 9, 5, 4), utc(2026, 9, 6, 4)),
    ],
)
def test_a_day_starts_and_ends_at_the_zones_midnight(
    now: datetime, zone: ZoneInfo, start: datetime, lifts: datetime
) -> None:
    """The day holding `now` starts at `start` and its caps lift at `lifts` (UTC)."""
    assert (start, lifts) == (day_start(now, zone), next_day(now, zone))
    assert UTC == day_start(now, zone).tzinfo == next_day(now, zone).tzinfo


def test_the_day_zone_setting_is_a_zone_or_one_line_naming_its_key() -> None:
    """`budgets_day_zone`: UTC by default, an IANA name read as that zone, anything else
    refused naming the key, whatever the name tries (a path)."""
    assert UTC == Settings().day_zone
    assert PARIS == Settings(budgets_day_zone="Europe/Paris").day_zone
    for bad in ("Mars/Olympus", "../../etc/passwd", ""):
        with pytest.raises(InvalidInput) as refused:
            Settings(budgets_day_zone=bad)
        assert "budgets_day_zone" == refused.value.field
