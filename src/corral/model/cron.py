"""Cron times: when a six-field expression (seconds first) fires, in UTC or an IANA zone.

The only module that imports cronsim (a small, typed, dependency-free parser that matches
Debian cron); the scheduler and the `schedule` commands import this module, nothing on
the start-up path of other commands does. Fields, in order:

    second minute hour day-of-month month day-of-week      e.g. "0 30 2 * * *" = 02:30:00

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

from corral.errors import InvalidInput

FIELDS = 6
EXPECTED = "six fields: second minute hour day-of-month month day-of-week"
NEVER = "an expression that fires (its day-of-month never comes in its months)"


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
    fields = expr.split()
    if len(fields) != FIELDS:
        raise InvalidInput("cron", EXPECTED, expr)
    try:
        CronSim(expr, datetime(2000, 1, 1, tzinfo=UTC))
    except CronSimError as exc:  # "Bad day-of-month": the field it names
        if _parses(" ".join([*fields[:4], "*", fields[5]])):  # a day no month given has
            raise InvalidInput("cron", NEVER, expr) from None
        raise InvalidInput("cron", f"a valid {_field(exc)}", expr) from None
    if next(times_after(expr, where, datetime(2000, 1, 1, tzinfo=UTC)), None) is None:
        raise InvalidInput("cron", NEVER, expr)


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
    fields = expr.split()
    return where is not UTC and not any(f.startswith("*") for f in fields[:3])


def times_after(expr: str, where: tzinfo, after: datetime) -> Iterator[datetime]:
    """Each fire time strictly after `after`, oldest first (UTC); ends after 50 years
    without one."""
    return _walk(expr, where, after, reverse=False)


def times_until(expr: str, where: tzinfo, until: datetime) -> Iterator[datetime]:
    """Each fire time at or before `until`, newest first (UTC)."""
    return _walk(expr, where, until, reverse=True)


def _walk(expr: str, where: tzinfo, start: datetime, *, reverse: bool) -> Iterator[datetime]:
    local = start.astimezone(where)
    if reverse:  # cronsim's reverse walk includes a start with microseconds: make one
        local += timedelta(microseconds=1)
    if wall_clock(expr, where):
        found = (_placed(t, where) for t in CronSim(expr, local.replace(tzinfo=None), reverse))
    else:
        found = (t.astimezone(UTC) for t in CronSim(expr, local, reverse))
    previous = None
    for at in found:  # cronsim stops after 50 years without a fire
        if at == previous or (at > start if reverse else at <= start):
            continue  # two local times placed on one instant, or one a repeat put back
        previous = at
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
