"""Cron times: five fields, six with seconds first, seven with a year; daylight saving in two
zones, bad input, keys."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from datetime import UTC, datetime
from itertools import islice

import pytest

from corral import InvalidInput
from corral.model import cron

PARIS, NEW_YORK = cron.zone("Europe/Paris"), cron.zone("America/New_York")


def _local(expr: str, zone_name: str, after: datetime, n: int) -> list[str]:
    where = cron.zone(zone_name)
    times = islice(cron.times_after(expr, where, after), n)
    return [at.astimezone(where).strftime("%m-%d %H:%M:%S%z") for at in times]


def test_the_first_of_six_fields_is_the_second():
    """Pinned: cronsim puts seconds first (croniter puts them last unless told otherwise)."""
    after = datetime(2030, 1, 1, tzinfo=UTC)
    assert datetime(2030, 1, 1, 0, 0, 15, tzinfo=UTC) == next(
        cron.times_after("15 * * * * *", UTC, after)
    )
    assert datetime(2030, 1, 1, 0, 15, tzinfo=UTC) == next(
        cron.times_after("0 15 * * * *", UTC, after)
    )


@pytest.mark.parametrize(
    ("zone_name", "expr", "day", "expected"),
    [
        # Spring: 02:30 does not exist that night; it fires once, at the gap's end.
        (
            "Europe/Paris",
            "0 30 2 * * *",
            datetime(2030, 3, 30, tzinfo=UTC),
            ["03-30 02:30:00+0100", "03-31 03:00:00+0200", "04-01 02:30:00+0200"],
        ),
        (
            "America/New_York",
            "0 30 2 * * *",
            datetime(2030, 3, 9, tzinfo=UTC),
            ["03-09 02:30:00-0500", "03-10 03:00:00-0400", "03-11 02:30:00-0400"],
        ),
        # Autumn: 02:30 (Paris) and 01:30 (New York) happen twice; each fires once, the first.
        (
            "Europe/Paris",
            "0 30 2 * * *",
            datetime(2030, 10, 26, tzinfo=UTC),
            ["10-26 02:30:00+0200", "10-27 02:30:00+0200", "10-28 02:30:00+0100"],
        ),
        (
            "America/New_York",
            "0 30 1 * * *",
            datetime(2030, 11, 2, 6, tzinfo=UTC),
            ["11-03 01:30:00-0400", "11-04 01:30:00-0500", "11-05 01:30:00-0500"],
        ),
    ],
)
def test_a_specific_time_follows_the_wall_clock_over_dst(zone_name, expr, day, expected):
    """A daily time fires once a day through both changes, in both zones."""
    assert expected == _local(expr, zone_name, day, 3)


def test_two_times_in_a_gap_make_one_fire():
    """02:00 and 02:30 on the Paris spring night both land on 03:00: one fire."""
    after = datetime(2030, 3, 31, tzinfo=UTC)
    assert ["03-31 03:00:00+0200", "04-01 02:00:00+0200"] == _local(
        "0 0,30 2 * * *", "Europe/Paris", after, 2
    )


def test_a_frequent_expression_runs_on_real_time_through_the_repeat():
    """Every 30 minutes over the autumn change: the repeated hour runs twice, as time does."""
    after = datetime(2030, 10, 27, 0, 0, tzinfo=UTC)  # 02:00+02:00 in Paris
    assert [
        "10-27 02:30:00+0200",
        "10-27 02:00:00+0100",
        "10-27 02:30:00+0100",
    ] == _local("0 */30 * * * *", "Europe/Paris", after, 3)


def test_five_fields_are_standard_cron_minute_first_at_second_zero():
    """`30 2 * * *` is 02:30:00, as in a crontab, on the wall clock of its zone too."""
    after = datetime(2030, 3, 30, tzinfo=UTC)
    assert ["03-30 02:30:00+0100", "03-31 03:00:00+0200"] == _local(
        "30 2 * * *", "Europe/Paris", after, 2
    )


@pytest.mark.parametrize(
    ("year", "forward", "back"),
    [
        ("2031", ["2031-11-01", "2031-12-01"], "2031-12-01"),
        ("2031,2033", ["2031-11-01", "2031-12-01", "2033-01-01"], "2033-12-01"),
        ("2032-2033", ["2032-01-01", "2032-02-01"], "2033-12-01"),
        ("*/3", ["2033-01-01", "2033-02-01"], "2036-12-01"),  # 1970 + 3k: 2033, 2036
        ("2031/2", ["2031-11-01", "2031-12-01", "2033-01-01"], "2037-12-01"),
        ("*", ["2031-11-01", "2031-12-01", "2032-01-01"], "2037-12-01"),
    ],
)
def test_a_seventh_field_names_the_years_it_fires_in(year, forward, back):
    """The year field filters the local year; the walk jumps the years it does not name,
    forward (from 2031-10-15) and back (from 2038-01-01)."""
    expr = f"0 0 0 1 * * {year}"
    times = islice(cron.times_after(expr, UTC, datetime(2031, 10, 15, tzinfo=UTC)), len(forward))
    assert forward == [at.strftime("%Y-%m-%d") for at in times]
    before = next(cron.times_until(expr, UTC, datetime(2037, 12, 31, tzinfo=UTC)))
    assert back == before.strftime("%Y-%m-%d")


def test_a_year_walk_ends_after_the_last_year_named():
    """Forward past the last year named: no time at all, not a walk of fifty years."""
    after = datetime(2031, 1, 1, tzinfo=UTC)
    assert [] == list(cron.times_after("* * * * * * 2030", UTC, after))
    until = datetime(2035, 6, 1, tzinfo=UTC)
    assert datetime(2030, 12, 31, 23, 59, 59, tzinfo=UTC) == next(
        cron.times_until("* * * * * * 2030", UTC, until)
    )


def test_times_until_walks_back_and_includes_its_bound():
    """Newest first, `until` itself included when it is a fire time."""
    until = datetime(2030, 1, 1, 0, 0, 5, tzinfo=UTC)
    assert [5, 4, 3] == [at.second for at in islice(cron.times_until("* * * * * *", UTC, until), 3)]


@pytest.mark.parametrize(
    ("expr", "zone_name", "field"),
    [
        ("0 0 0 31 2 *", "UTC", "cron: expected an expression that fires"),
        ("0 0 0 30 2,4 *", "UTC", None),  # April has a 30th
        ("61 * * * * *", "UTC", "cron: expected a valid second field"),
        ("0 0 25 * * *", "UTC", "cron: expected a valid hour field"),
        ("0 0 * *", "UTC", "cron: expected five fields"),
        ("0 0 0 * * * 2030 1", "UTC", "cron: expected five fields"),
        ("0 0 0 * * * 2030", "UTC", None),
        ("0 0 0 * * * 1999", "UTC", "cron: expected an expression that fires (a year field"),
        ("0 0 0 * * * 2100", "UTC", "cron: expected years from 1970 to 2099"),
        ("0 0 0 * * * 2031-2030", "UTC", "cron: expected years from 1970 to 2099"),
        ("0 0 0 * * * */0", "UTC", "cron: expected years from 1970 to 2099"),
        ("0 0 0 * * * 20x0", "UTC", "cron: expected a valid year field"),
        ("61 * * * *", "UTC", "cron: expected a valid minute field"),
        ("x * * * * *", "UTC", "cron: expected a valid second field"),
        ("0 0 0 * * *", "Mars/Olympus", "timezone: expected an IANA time zone"),
    ],
)
def test_bad_expressions_and_zones_are_refused_naming_the_field(expr, zone_name, field):
    """One line that names what is wrong (None: a valid one, for contrast)."""
    if field is None:
        cron.check(expr, zone_name)
        return
    with pytest.raises(InvalidInput) as raised:
        cron.check(expr, zone_name)
    assert raised.value.message.startswith(field)


def test_the_fire_key_is_the_schedule_and_the_utc_second():
    """`schedule:{id}:{RFC 3339 in UTC}`, whatever zone the time is given in."""
    at = datetime(2030, 3, 31, 3, 0, tzinfo=PARIS)
    assert "schedule:nightly:2030-03-31T01:00:00Z" == cron.fire_key("nightly", at)
