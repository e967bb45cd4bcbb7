"""Labels as people type them: `key=value` pairs, on tasks and on workers."""

from __future__ import annotations

from collections.abc import Sequence

from corral.foundation.errors import InvalidInput


def parse_labels(field: str, items: Sequence[str] | None) -> dict[str, str]:
    """`k=v` pairs as a dict; InvalidInput naming `field` for an item without `=` or key."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInput(field, "key=value", item)
        out[key] = value
    return out
