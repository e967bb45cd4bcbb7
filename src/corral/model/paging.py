"""Pages of the CLI's listings (`list`, `ready`, `events`, `runs`, `worker list`): a page
and the cursor of the next one, as seed 002's ListWorkers answers them.

A cursor is the sort key of the page's last row (keyset paging, never an offset: the
store reads on from that key by an index, so page 1,000 costs what page 1 costs), as the
dashboard's task pages do (model/task_pages.py). To a user it is opaque: base64url of
`LISTING:K1.K2`, where LISTING names the listing it came from, so a cursor of one
listing is refused by another rather than read as something else. Keys are whole
numbers: tasks' seq (and priority, for `ready`'s claim order), events' id, runs' and
workers' seq, each unique in its table.
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from corral.foundation.errors import InvalidInput
from corral.foundation.records import record

MAX_CURSOR_CHARS = 200  # past any cursor this module makes
_KEY = re.compile(r"([a-z]+):(-?[0-9]{1,19}(?:\.-?[0-9]{1,19})*)")
# base64url by binascii, as base64.urlsafe_b64encode and urlsafe_b64decode do it: the
# base64 module (struct with it) is half a millisecond of a listing's start-up.
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


class Record(Protocol):
    """What a page holds: records with a JSON shape."""

    def to_dict(self) -> dict[str, Any]: ...


R = TypeVar("R", bound=Record)


@record(frozen=True, slots=True, kw_only=True)
class Page(Generic[R]):
    """The rows of one page, the cursor of the next (None: this is the last) and, when
    asked for, how many rows the filters match in all."""

    items: Sequence[R]
    next: str | None
    total: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The `--json --paged` shape (docs/cli.md)."""
        return {
            "items": [r.to_dict() for r in self.items],
            "next": self.next,
            "total": self.total,
        }


def cursor(listing: str, key: tuple[int, ...]) -> str:
    """The opaque cursor of `key` in `listing`."""
    text = f"{listing}:{'.'.join(map(str, key))}"
    encoded = binascii.b2a_base64(text.encode("ascii"), newline=False).translate(_TO_URLSAFE)
    return encoded.decode("ascii").rstrip("=")


def parse_cursor(listing: str, raw: str, size: int) -> tuple[int, ...]:
    """The key of `size` numbers a cursor of `listing` holds; InvalidInput naming --after
    if `raw` is not one (garbled, cut short, or another listing's)."""
    bad = InvalidInput("after", f"a cursor printed by `{listing}` (its next page)", raw)
    if len(raw) > MAX_CURSOR_CHARS or not raw.isascii():
        raise bad
    try:
        padded = (raw + "=" * (-len(raw) % 4)).encode("ascii").translate(_FROM_URLSAFE)
        text = binascii.a2b_base64(padded).decode("ascii")
    except (binascii.Error, ValueError):
        raise bad from None
    found = _KEY.fullmatch(text)
    if found is None or found[1] != listing:
        raise bad
    key = tuple(int(part) for part in found[2].split("."))
    if len(key) != size:
        raise bad
    return key


def page_of(
    found: Sequence[R], limit: int, listing: str, key: Callable[[R], tuple[int, ...]]
) -> tuple[Sequence[R], str | None]:
    """The first `limit` of `found` (read as `limit` + 1, so one more says whether a next
    page exists) and the cursor after the last of them, None when there is no more."""
    if len(found) <= limit:
        return found, None
    shown = found[:limit]
    return shown, cursor(listing, key(shown[-1]))
