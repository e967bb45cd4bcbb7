"""How long a usage limit parks its provider account (model/providers.py park_until): the
reset given, else `[agents] park_default`, never less than `[agents] park_min` from now."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from corral.model.providers import park_until

NOW = datetime(2026, 11, 29, 4, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("reset_in_s", "default_s", "min_s", "parked_s", "by_minimum"),
    [
        (3600, 60, 60, 3600, False),  # a reset ahead stands
        (60, 60, 60, 60, False),  # exactly the minimum away: the reset
        (10, 60, 60, 60, True),  # just ahead: the minimum
        (-30, 60, 60, 60, True),  # already past (the agent still refuses): the minimum
        (None, 3600, 60, 3600, False),  # no reset given: park_default
        (None, 1, 60, 60, True),  # a park_default under the minimum: the minimum
        (-30, 60, 0, 0, True),  # park_min 0: a reset past parks no later than now
    ],
)
def test_a_park_lasts_until_the_reset_but_at_least_the_minimum(
    reset_in_s: int | None, default_s: float, min_s: float, parked_s: int, by_minimum: bool
) -> None:
    """The park's end, and whether the minimum decided it (the reason then says so)."""
    reset = None if reset_in_s is None else NOW + timedelta(seconds=reset_in_s)
    expected = (NOW + timedelta(seconds=parked_s), by_minimum)
    assert expected == park_until(reset, NOW, default_s=default_s, min_s=min_s)
