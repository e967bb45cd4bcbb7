"""Durations and instants as people type them."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from corral.foundation.durations import (
    format_age,
    format_duration,
    iso,
    parse_delay_or_instant,
    parse_duration_s,
    parse_instant,
)
from corral.foundation.errors import InvalidInput

NOW = datetime(2030, 1, 31, 9, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("30m", 1800.0),
        ("2h", 7200.0),
        ("1d", 86400.0),
        ("1h30m", 5400.0),
        ("1d2h3m4s", 93784.0),
        ("1.5h", 5400.0),
        ("250ms", 0.25),
        ("0s", 0.0),
        (" 2H ", 7200.0),
        (45, 45.0),
        (2.5, 2.5),
    ],
)
def test_durations_parse_to_seconds(text: str | float, seconds: float) -> None:
    """Each accepted form, and a bare number from a config file, gives its seconds."""
    assert seconds == parse_duration_s("timeout", text)


@pytest.mark.parametrize(
    "text",
    ["", "  ", "abc", "10x", "-5s", "1h 30m", "m", "5 s", "h1", "1e3", True, None, [1], -1],
)
def test_bad_durations_raise_invalid_input_naming_the_field(text: object) -> None:
    """Anything that is not a duration is InvalidInput whose message starts with the field."""
    with pytest.raises(InvalidInput, match=r"^timeout: expected a duration such as 90s") as caught:
        parse_duration_s("timeout", text)  # type: ignore[arg-type]
    assert "timeout" == caught.value.field
    assert 2 == caught.value.exit_code


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        ("2030-01-31T09:00:00Z", NOW),
        ("2030-01-31T09:00:00+00:00", NOW),
        ("2030-01-31T10:00:00+01:00", NOW),
        ("2030-01-31T09:00:00", NOW),
        (" 2030-01-31 09:00 ", NOW),
    ],
)
def test_iso_instants_parse_to_aware_utc(text: str, instant: datetime) -> None:
    """ISO 8601 with Z, an offset, or no zone (taken as UTC) gives the same aware instant."""
    parsed = parse_instant("run_after", text)
    assert instant == parsed
    assert parsed.tzinfo is not None


@pytest.mark.parametrize("text", ["tomorrow", "2030-13-01", "", "31/01/2030"])
def test_bad_instants_raise_invalid_input(text: str) -> None:
    """Text that is not ISO 8601 is InvalidInput naming the field and an example."""
    with pytest.raises(InvalidInput, match=r"^run_after: expected an ISO 8601 time"):
        parse_instant("run_after", text)


@pytest.mark.parametrize(
    ("text", "when"),
    [
        ("10m", 600.0),
        ("90", 90.0),
        ("2030-01-31T09:01:30Z", datetime(2030, 1, 31, 9, 1, 30, tzinfo=UTC)),
        ("2030-01-31T09:00:00", NOW),
    ],
)
def test_delay_or_instant_gives_a_delay_or_an_exact_instant(
    text: str, when: float | datetime
) -> None:
    """A duration is a delay in seconds; an ISO 8601 time is kept as that exact instant."""
    assert when == parse_delay_or_instant("run_after", text)


def test_delay_or_instant_rejects_other_text_naming_both_forms() -> None:
    """Text that is neither form is InvalidInput that mentions durations and ISO times."""
    with pytest.raises(InvalidInput, match=r"^run_after: .*90s.*or an ISO 8601 time"):
        parse_delay_or_instant("run_after", "soon")


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (0.2, "200ms"),
        (45, "45s"),
        (59.4, "59s"),
        (59.6, "1m"),
        (90, "1m30s"),
        (600, "10m"),
        (650, "10m"),
        (720, "12m"),
        (3600, "1h"),
        (12000, "3h20m"),
        (3630, "1h"),
        (86400, "1d"),
        (90000, "1d1h"),
        (172800, "2d"),
    ],
)
def test_format_duration_is_short_and_readable(seconds: float, text: str) -> None:
    """Durations print in the largest units, dropping detail that does not matter at that size."""
    assert text == format_duration(seconds)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.0, "0s"), (0.708, "0s"), (1.9, "1s"), (-3.0, "0s"), (90.5, "1m30s")]
)
def test_an_age_is_whole_seconds(seconds: float, text: str) -> None:
    """A review's wait or a heartbeat's age: never milliseconds, never negative."""
    assert text == format_age(seconds)


def test_iso_renders_utc_or_none() -> None:
    """iso gives ISO 8601 text for an instant and None for None."""
    assert ("2030-01-31T09:00:00+00:00", None) == (iso(NOW), iso(None))


@pytest.mark.parametrize(("text", "seconds"), [("10", 10.0), (" 90 ", 90.0), ("2.5", 2.5)])
def test_a_bare_number_is_seconds(text: str, seconds: float) -> None:
    """A bare number means seconds, as in settings named *_s, so `--lease 60` works."""
    assert seconds == parse_duration_s("lease", text)
