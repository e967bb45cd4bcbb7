"""Durations as people type them (`90s`, `30m`, `2h`, `1d`, `1h30m`, or bare seconds `90`)
and instants (ISO 8601).

Parsing lives here so the CLI, the config file and the environment accept the same forms.
"""

from __future__ import annotations

import re
from contextlib import suppress
from datetime import UTC, datetime, timedelta

from corral.foundation.errors import InvalidInput

_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
# Patterns, not compiled ones: `re` compiles each on first use (and caches it), so the
# commands that parse no duration, nearly all of them, do not pay for it at start-up.
_PART = r"([0-9]+(?:\.[0-9]+)?)(ms|s|m|h|d)"  # ASCII digits: `\d` takes `٣` too
_BARE = r"[0-9]+(?:\.[0-9]+)?"  # a bare number is seconds
EXPECTED = "a duration such as 90s, 30m, 2h or 1d"
# The longest span any duration may have: instants past it could not be read back.
MAX_SPAN_S = 100 * 365 * 86400.0


def parse_duration_s(field: str, text: str | float) -> float:
    """Seconds in `text`; a bare number (from a config file) is already seconds."""
    if isinstance(text, int | float) and not isinstance(text, bool):
        return _in_range(field, float(text))
    if not isinstance(text, str):
        raise InvalidInput(field, EXPECTED, text)
    compact = text.strip().lower()
    if re.fullmatch(_BARE, compact):
        return _in_range(field, float(compact))
    if not compact or re.sub(_PART, "", compact):
        raise InvalidInput(field, EXPECTED, text)
    return _in_range(field, sum(float(n) * _UNIT_S[u] for n, u in re.findall(_PART, compact)))


def _in_range(field: str, seconds: float) -> float:
    if not 0 <= seconds <= MAX_SPAN_S:  # written so that NaN fails too
        raise InvalidInput(field, f"{EXPECTED}, at most 100 years", seconds)
    return seconds


# The instants every store and every reader handles: Python's calendar (years 1 to 9999)
# less a day at each end, so that a time shown in any zone, or a lease added to it, still
# has a date. An instant past them, once written, would fail every read of its row.
FIRST_INSTANT = datetime.min.replace(tzinfo=UTC) + timedelta(days=1)
LAST_INSTANT = datetime.max.replace(tzinfo=UTC) - timedelta(days=1)
INSTANT_RANGE = "an instant from 0001-01-02 to 9999-12-30 (UTC)"


def check_instant(field: str, instant: datetime) -> datetime:
    """`instant` when it is aware and within FIRST_INSTANT..LAST_INSTANT: the one door every
    instant given from outside passes (the CLI, the HTTP API, the use cases)."""
    if instant.tzinfo is None:
        raise InvalidInput(field, "an aware datetime (with a time zone)", instant)
    if not FIRST_INSTANT <= instant <= LAST_INSTANT:  # aware comparisons never overflow
        raise InvalidInput(field, INSTANT_RANGE, instant.isoformat())
    return instant


def parse_instant(field: str, text: str) -> datetime:
    """An ISO 8601 instant within the calendar's range; one without a zone is taken as UTC."""
    try:
        parsed = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(field, "an ISO 8601 time such as 2030-01-31T09:00:00Z", text) from None
    return check_instant(field, parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC))


def parse_delay_or_instant(field: str, text: str) -> float | datetime:
    """A delay in seconds (`10m`) or an exact instant (ISO 8601), whichever `text` is."""
    with suppress(InvalidInput):
        return parse_duration_s(field, text)
    try:
        datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(field, f"{EXPECTED}, or an ISO 8601 time", text) from None
    return parse_instant(field, text)  # a time: refused past the calendar's range


def format_duration(seconds: float) -> str:
    """A short human form: `45s`, `12m`, `3h20m`, `2d`."""
    if 0 < seconds < 1:
        return f"{round(seconds * 1000)}ms"
    s = round(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m" + (f"{s % 60}s" if s % 60 and s < 600 else "")
    if s < 86400:
        return f"{s // 3600}h" + (f"{s % 3600 // 60}m" if s % 3600 >= 60 else "")
    return f"{s // 86400}d" + (f"{s % 86400 // 3600}h" if s % 86400 >= 3600 else "")


def format_age(seconds: float) -> str:
    """How long ago, or for how long, in whole seconds and up (`0s`, `45s`, `3h20m`): an
    age read at a glance; milliseconds belong to durations that were measured."""
    return format_duration(float(int(max(0.0, seconds))))


def iso(instant: datetime | None) -> str | None:
    """ISO 8601 in UTC, or None: the one format instants take in JSON."""
    return None if instant is None else instant.isoformat()


def unix_ms(instant: datetime | None) -> int | None:
    """Unix milliseconds, or None: the instants of seed 001's JSON (the HTTP API's seed routes)."""
    return None if instant is None else round(instant.timestamp() * 1000)
