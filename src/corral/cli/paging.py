"""The paging flags the listings share (`--limit`, `--after`, `--count`, `--paged`) and how
a page is printed: `--json --paged` as `{"items", "next", "total"}`, `--json` alone as the
array it always was, and human output with a last line saying how to read the next page.
The cursors are model/paging.py's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

from corral.cli import parsing
from corral.cli.commands import Arg
from corral.cli.context import Context
from corral.foundation.errors import InvalidInput
from corral.foundation.records import record
from corral.model.paging import Page, R, page_of, parse_cursor


def args(default_limit: int | None) -> tuple[Arg, ...]:
    """The paging flags of a listing whose page is `default_limit` rows (None: all)."""
    shown = "all" if default_limit is None else str(default_limit)
    return (
        Arg("--limit", metavar="N", help=f"at most N rows (default {shown})"),
        Arg("--after", metavar="CURSOR", help="the page after this cursor (printed as next)"),
        Arg("--count", action="store_true", help="also count every row the filters match"),
        Arg("--paged", action="store_true", help='with --json: {"items", "next", "total"}'),
    )


@record(frozen=True, slots=True, kw_only=True)
class Ask:
    """A listing's page as its flags ask for it."""

    listing: str
    limit: int | None  # None: every row
    after: tuple[int, ...] | None
    count: bool
    defaulted: bool  # the limit is the listing's default, not the user's

    @property
    def read(self) -> int | None:
        """How many rows to read: one more than the page says whether a next one exists."""
        return None if self.limit is None else self.limit + 1

    def page(
        self, found: Sequence[R], key: Callable[[R], tuple[int, ...]], total: int | None
    ) -> Page[R]:
        """The page of `found` (read as `self.read` rows), its next cursor and `total`."""
        if self.limit is None:
            return Page(items=found, next=None, total=total)
        items, after = page_of(found, self.limit, self.listing, key)
        return Page(items=items, next=after, total=total)


def ask(ctx: Context, listing: str, *, key_size: int, default_limit: int | None) -> Ask:
    """The page the flags ask for, each flag checked (a one-line error, exit 2)."""
    a = ctx.args
    if a.count and ctx.json and not a.paged:
        raise InvalidInput("count", "--paged with --json (a bare array has no room for a total)")
    limit = parsing.whole("limit", a.limit, minimum=1)
    after = None if a.after is None else parse_cursor(listing, a.after, key_size)
    return Ask(
        listing=listing,
        limit=default_limit if limit is None else limit,
        after=after,
        count=a.count,
        defaulted=limit is None,
    )


def emit(ctx: Context, ask: Ask, page: Page[R], human: Callable[[], str]) -> None:
    """Print `page`: the JSON shape the flags ask for, or `human()` and the paging lines."""
    if ask.defaulted and page.next is not None:
        sys.stderr.write(
            f"corral: {ask.listing} stopped at its default limit of {ask.limit};"
            " --limit N or --after CURSOR shows more\n"
        )
    if ctx.json:
        paged = ctx.args.paged
        ctx.emit(page.to_dict() if paged else [r.to_dict() for r in page.items], "")
        return
    lines = [human()]
    if page.total is not None:
        lines.append(f"{page.total} in all")
    if page.next is not None:
        lines.append(f"next page: --after {page.next}")
    ctx.emit(None, "\n".join(lines))
