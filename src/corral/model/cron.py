"""Cron times: when a cron expression fires, in UTC or an IANA zone.

The only module that imports cronsim (a small, typed, dependency-free parser that matches
Debian cron); the scheduler and the `schedule` commands import this module, nothing on
the start-up path of other commands does. Three shapes are accepted, as cron users write
them (the standard five fields, Quartz's seconds first, and its year last):

    minute hour day-of-month month day-of-week                  "30 2 * * *"
    second minute hour day-of-month month day-of-week           "0 30 2 * * *"
    second minute hour day-of-month month day-of-week year      "0 30 2 * * * 2027"

Five fields fire at second 0. The year field takes what Quartz's does, from 1970 to 2099:
`*`, a year, a range `2027-2029`, a step `*/2` or `2027/2`, and lists of these; cronsim
walks the six fields and the years are a filter on the local year, the walk jumping over
the years not named. The expression is stored as written; every function here reads it
in any of the three shapes.

Daylight saving follows cronsim's documented rule, which is Debian cron's: an expression
that fires at specific times (its second, minute and hour fields each start with
something other than `*`) runs on the wall clock: a local time that does not exist (the
spring gap) fires once, at the first minute after the gap, and a local time that occurs
twice (the autumn repeat) fires once, at its first occurrence. Every other expression
(every second, `*/15` minutes ...) runs on real time, straight through a change. cronsim
applies this rule to five-field expressions only; corral applies it to its six fields
the same way: the wall-clock expressions are walked without a zone and each local time
is placed on the timeline as cronsim places them (`fold=0`, then forward by minutes out
of a gap). Every time returned is an aware UTC datetime.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError
from cronsim.cronsim import is_imaginary

from corral.foundation.durations import FIRST_INSTANT, LAST_INSTANT
from corral.foundation.errors import InvalidInput

EXPECTED = (
    "five fields (minute hour day-of-month month day-of-week), six (second first) "
    "or seven (second first, year last)"
)
NEVER = "an expression that fires (its day-of-month never comes in its months)"
NEVER_AGAIN = "an expression that fires (a year field naming a year to come)"
FIRST_YEAR, LAST_YEAR = 1970, 2099  # the years a year field may name, as Quartz's


def zone(name: str) -> tzinfo:
    """The IANA time zone `name` (`UTC` too); InvalidInput naming `timezone` if none."""
    if name == "UTC":
        return UTC
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidInput("timezone", "an IANA time zone such as Europe/Paris", name) from None


def check(expr: str, zone_name: str = "UTC") -> None:
    """Refuse an expression that does not parse, has a field out of range, or never fires
    (`0 0 0 31 2 *`), naming the field (`cron` or `timezone`)."""
    where = zone(zone_name)
    six, years = _shape(expr)
    fields = six.split()
    try:
        CronSim(six, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError as exc:  # "Bad day-of-month": the field it names
        if _parses(" ".join([*fields[:4], "*", fields[5]])):  # a day no month given has
            raise InvalidInput("cron", NEVER, expr) from None
        raise InvalidInput("cron", f"a valid {_field(exc)}", expr) from None
    if next(times_after(expr, where, datetime(2000, 1, 1, tzinfo=UTC)), None) is None:
        raise InvalidInput("cron", NEVER if years is None else NEVER_AGAIN, expr)


def _shape(expr: str) -> tuple[str, frozenset[int] | None]:
    """The six fields cronsim walks, and the years of a seventh field (None: every year).
    InvalidInput naming `cron` for any other number of fields or a bad year field."""
    fields = expr.split()
    if len(fields) == 5:
        return " ".join(["0", *fields]), None
    if len(fields) == 6:
        return expr, None
    if len(fields) == 7:
        return " ".join(fields[:6]), _years(fields[6], expr)
    raise InvalidInput("cron", EXPECTED, expr)


def _years(field: str, expr: str) -> frozenset[int] | None:
    """The years a year field names, within FIRST_YEAR..LAST_YEAR (None for `*`)."""
    if field == "*":
        return None
    years: set[int] = set()
    for part in field.split(","):
        span, _, step = part.partition("/")
        low, _, high = span.partition("-")
        try:
            first = FIRST_YEAR if low == "*" and not high else int(low)
            last = int(high) if high else (LAST_YEAR if step or low == "*" else first)
            every = int(step) if step else 1
        except ValueError:
            raise InvalidInput("cron", "a valid year field", expr) from None
        if not (FIRST_YEAR <= first <= last <= LAST_YEAR and every >= 1):
            raise InvalidInput("cron", f"years from {FIRST_YEAR} to {LAST_YEAR}", expr)
        years.update(range(first, last + 1, every))
    return frozenset(years)


def _parses(expr: str) -> bool:
    try:
        CronSim(expr, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError:
        return False
    return True


def _field(exc: CronSimError) -> str:
    text = str(exc)
    return text.removeprefix("Bad ") + " field" if text.startswith("Bad ") else "expression"


def wall_clock(expr: str, where: tzinfo) -> bool:
    """Whether `expr` runs on the wall clock of `where` (module docstring)."""
    fields = _shape(expr)[0].split()
    return where is not UTC and not any(f.startswith("*") for f in fields[:3])


def times_after(expr: str, where: tzinfo, after: datetime) -> Iterator[datetime]:
    """Each fire time strictly after `after`, oldest first (UTC); ends after 50 years
    without one."""
    return _walk(expr, where, after, reverse=False)


def times_until(expr: str, where: tzinfo, until: datetime) -> Iterator[datetime]:
    """Each fire time at or before `until`, newest first (UTC)."""
    return _walk(expr, where, until, reverse=True)


def _walk(expr: str, where: tzinfo, start: datetime, *, reverse: bool) -> Iterator[datetime]:
    six, years = _shape(expr)
    if years is None:
        yield from _walk_six(six, where, start, reverse=reverse)
        return
    here = start.astimezone(where).year
    cursor = start
    for year in sorted(years, reverse=reverse):  # each year named, walked once, in order
        if year > here if reverse else year < here:
            continue
        if year != here:  # from just after the year's end (reverse) or just before its start
            edge = datetime(year + 1 if reverse else year, 1, 1, tzinfo=where)
            cursor = edge.astimezone(UTC) - timedelta(microseconds=1)
        for at in _walk_six(six, where, cursor, reverse=reverse):
            if at.astimezone(where).year != year:
                break
            yield at
        else:  # fifty years without a fire
            return


def _walk_six(expr: str, where: tzinfo, start: datetime, *, reverse: bool) -> Iterator[datetime]:
    local = start.astimezone(where)
    if reverse:  # cronsim's reverse walk includes a start with microseconds: make one
        local += timedelta(microseconds=1)
    if wall_clock(expr, where):
        found = (_placed(t, where) for t in CronSim(expr, local.replace(tzinfo=None), reverse))
    else:
        found = (t.astimezone(UTC) for t in CronSim(expr, local, reverse))
    previous = None
    for at in _within_calendar(found):  # cronsim stops after 50 years without a fire
        if at == previous or (at > start if reverse else at <= start):
            continue  # two local times placed on one instant, or one a repeat put back
        previous = at
        yield at


def _within_calendar(found: Iterator[datetime]) -> Iterator[datetime]:
    """`found` until a time leaves FIRST_INSTANT..LAST_INSTANT: an expression walked to
    the calendar's edge ends there (cronsim would raise OverflowError past year 9999)."""
    while True:
        try:
            at = next(found)
        except (StopIteration, OverflowError, ValueError):
            return
        if not FIRST_INSTANT <= at <= LAST_INSTANT:
            return
        yield at


def _placed(naive: datetime, where: tzinfo) -> datetime:
    """A wall-clock time on the timeline as cronsim places it: the first of a repeated
    time; a time in a gap moved forward a minute at a time until it exists."""
    at = naive.replace(tzinfo=where, fold=0)
    while is_imaginary(at):
        naive += timedelta(minutes=1)
        at = naive.replace(tzinfo=where, fold=0)
    return at.astimezone(UTC)


def fire_key(schedule_id: str, fire_at: datetime) -> str:
    """The key that makes a fire happen once: `schedule:{id}:{fire time, RFC 3339 UTC}`."""
    return f"schedule:{schedule_id}:{fire_at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}"
