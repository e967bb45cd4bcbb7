"""Conformance: day caps (issue 31) set, kept, changed one at a time and removed, on every
store; bad figures refused with nothing written."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral import InvalidInput, Store
from corral.model.budgets import DayCap
from corral.model.events import EventFilter
from corral.usecases.usage import set_day_cap


def test_day_caps_are_set_kept_changed_one_at_a_time_and_removed(store: Store) -> None:
    set_day_cap(store, "queue", "code", max_cost="40", max_tokens=None)
    set_day_cap(store, "provider", "claude", max_cost="$100", max_tokens="2M")
    changed = set_day_cap(store, "queue", "code", max_cost=None, max_tokens="500k")
    assert DayCap(scope="queue", name="code", max_cost_usd=40.0, max_tokens=500_000) == changed
    expected = [
        DayCap(scope="provider", name="claude", max_cost_usd=100.0, max_tokens=2_000_000),
        changed,
    ]
    assert expected == store.day_caps.day_caps()
    set_day_cap(store, "queue", "code", max_cost="none", max_tokens="none")
    assert [expected[0]] == store.day_caps.day_caps()  # no cap left: the row is gone
    events = store.events.list_events(EventFilter(names=("budget.day_cap",)))
    assert 4 == len(events)
    assert {"scope": "queue", "name": "code", "max_cost_per_day": None,
            "max_tokens_per_day": None} == events[-1].data  # fmt: skip


@pytest.mark.parametrize(
    ("cost", "tokens", "field"),
    [("0", None, "max_cost_per_day"), ("lots", None, "max_cost_per_day"),
     (None, "-5", "max_tokens_per_day"), (None, "1.5X", "max_tokens_per_day")],
)  # fmt: skip
def test_a_bad_day_cap_names_its_field_and_writes_nothing(
    store: Store, cost: str | None, tokens: str | None, field: str
) -> None:
    with pytest.raises(InvalidInput, match=field):
        set_day_cap(store, "queue", "code", max_cost=cost, max_tokens=tokens)
    assert [] == store.day_caps.day_caps()
