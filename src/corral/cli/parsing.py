"""Turning argument strings into values, each failure a one-line error naming the field."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from corral.foundation import documents
from corral.foundation.durations import parse_duration_s
from corral.foundation.errors import InvalidInput


def whole(
    field: str, raw: str | None, minimum: int | None = None, maximum: int = documents.MAX_INT32
) -> int | None:
    """An integer written in ASCII digits, an optional `-` first (not `+5`, ` 5`, `1_000`
    or other scripts' digits, which Python's int() takes), within what the store's column
    holds (`maximum`; negative allowed unless `minimum` says otherwise), or None."""
    if raw is None:
        return None
    if not re.fullmatch(r"-?[0-9]+", raw):
        raise InvalidInput(field, "a whole number", raw)
    low = -maximum - 1 if minimum is None else minimum
    if len(raw) > 20 or not low <= int(raw) <= maximum:  # 20 digits: past any bound
        raise InvalidInput(field, f"a whole number from {low} to {maximum}", raw)
    return int(raw)


def amount(field: str, raw: str | None, maximum: float) -> float | None:
    """A number of 0 or more written in ASCII digits with an optional fraction (`12`, `3.5`;
    not `-1`, `1e3`, `nan` or `inf`, which float() takes), at most `maximum`, or None."""
    if raw is None:
        return None
    if len(raw) > 40 or not re.fullmatch(r"[0-9]+(\.[0-9]+)?", raw) or float(raw) > maximum:
        raise InvalidInput(field, f"a number from 0 to {maximum:g}", raw)
    return float(raw)


def each_of(field: str, raw: Sequence[str] | None, allowed: Sequence[str]) -> tuple[str, ...]:
    """Every value of a repeatable option, each checked against `allowed`; () if none."""
    for value in raw or ():
        if value not in allowed:
            raise InvalidInput(field, f"one of {', '.join(allowed)}", value)
    return tuple(raw or ())


def duration(field: str, raw: str | None) -> float | None:
    """Seconds from `90s`, `30m`, `2h`, `1d`, or None."""
    return None if raw is None else parse_duration_s(field, raw)


def positive_duration(field: str, raw: str | None) -> float | None:
    """Like `duration`, but zero is refused."""
    value = duration(field, raw)
    if value is not None and value <= 0:
        raise InvalidInput(field, "a duration greater than zero, such as 30m", raw)
    return value


def json_value(field: str, raw: str | None) -> Any:
    """Parsed JSON text that every store holds alike (corral.foundation.documents), or None."""
    return None if raw is None else documents.parse(field, raw)


def json_object(field: str, raw: str | None) -> dict[str, Any]:
    """A JSON object, or {} when absent."""
    value = json_value(field, raw)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(field, 'a JSON object such as {"key": "value"}', raw)
    return value


def labels(field: str, items: Sequence[str] | None) -> dict[str, str]:
    """`k=v` pairs as a dict (the rule is the model's: worker options are checked by it too)."""
    from corral.model.labels import parse_labels  # only commands taking labels

    return parse_labels(field, items)
