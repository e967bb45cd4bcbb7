"""What every store can hold: JSON documents, whole numbers and text, checked before a write.

The two stores differ at the edges, and a value past an edge must be refused the same way
on both (InvalidInput, exit 2) before anything is written:

- PostgreSQL's jsonb refuses NaN, Infinity and the character U+0000 (exit 3 there), while
  SQLite keeps them as text that the next `--json` reader cannot parse; a string holding
  half of a surrogate pair cannot be encoded as UTF-8 at all.
- Python's JSON encoder and decoder recurse: a document nested about a thousand deep
  cannot be written or read back. Documents may nest at most `MAX_DEPTH` deep.
- Whole numbers go into 32-bit columns (`integer`: priorities, limits, pids) or 64-bit
  ones (`bigint`: fencing tokens, message ids); SQLite refuses past 64 bits with an
  OverflowError, PostgreSQL past 32 with "integer out of range".

Text corral did not check itself (a command's stderr, its usage line, the prompt given
as an argument) can hold NUL, which neither a PostgreSQL text column nor an argv can:
`without_nul` replaces each NUL with U+FFFD, the character that already stands for bytes
that are not UTF-8.
"""

from __future__ import annotations

import json
from typing import Any

from corral.foundation.errors import InvalidInput

MAX_DEPTH = 64
# The levels an HTTP request body may add around a document (`{"payload": {...}}`, an RPC's
# arguments): a body may nest this much deeper, and each document in it is held to MAX_DEPTH
# where it is taken (NewTask, NewMessage, a claim's result), as on every other surface.
ENVELOPE_DEPTH = 8
MAX_INT32 = 2**31 - 1  # PostgreSQL `integer`
MAX_INT64 = 2**63 - 1  # PostgreSQL `bigint`, SQLite INTEGER
NUL = "\x00"
REPLACEMENT = "\ufffd"
_EXPECTED = (
    f"JSON nested at most {MAX_DEPTH} deep, with finite numbers and text without NUL"
    " or lone surrogates"
)


def parse(field: str, raw: str, depth: int = MAX_DEPTH) -> Any:
    """The JSON document in `raw`, nested at most `depth` deep and checked; InvalidInput
    naming `field` otherwise."""
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise InvalidInput(field, f"valid JSON ({exc.msg} at character {exc.pos})", raw) from None
    except RecursionError:
        raise InvalidInput(field, f"JSON nested at most {depth} deep", _short(raw)) from None
    except ValueError as exc:  # NaN/Infinity (below) or an integer of more than 4300 digits
        raise InvalidInput(field, f"valid JSON ({exc})", _short(raw)) from None
    check(field, value, depth)
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number: numbers must be finite")


def _short(raw: str) -> str:
    return raw if len(raw) <= 40 else raw[:40] + "..."


def check(field: str, value: Any, depth: int = MAX_DEPTH) -> None:
    """Refuse a document the stores cannot hold alike (see the module docstring); iterative,
    so that depth itself cannot exhaust the stack."""
    if problem := problem_of(value, depth):
        expected = _EXPECTED.replace(f"at most {MAX_DEPTH}", f"at most {depth}")
        raise InvalidInput(field, expected, problem)


def problem_of(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """What makes `value` a document the stores cannot hold alike, or None."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth > max_depth:
                return f"nested more than {max_depth} deep"
            children = item.items() if isinstance(item, dict) else ((None, v) for v in item)
            for key, child in children:
                if isinstance(key, str) and (problem := _text_problem(key)):
                    return problem
                stack.append((child, depth + 1))
        elif isinstance(item, float) and not abs(item) < float("inf"):
            return f"the number {item}"
        elif isinstance(item, str) and (problem := _text_problem(item)):
            return problem
    return None


def _text_problem(text: str) -> str | None:
    if NUL in text:
        return f"NUL (\\u0000) in {_short(text)!r}"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return f"a lone surrogate in {_short(text)!r}"
    return None


def check_text(field: str, text: str) -> None:
    """Refuse text holding NUL or a lone surrogate (a title, a description)."""
    if problem := _text_problem(text):
        raise InvalidInput(field, "text without NUL or lone surrogates", problem)


def without_nul(text: str) -> str:
    """`text` with each NUL replaced by U+FFFD (text corral passes on but did not check)."""
    return text.replace(NUL, REPLACEMENT) if NUL in text else text


def whole(field: str, value: int, minimum: int, maximum: int = MAX_INT32) -> int:
    """`value`, refused unless `minimum <= value <= maximum`."""
    if not minimum <= value <= maximum:
        raise InvalidInput(field, f"a whole number from {minimum} to {maximum}", value)
    return value
