"""Terminal cells: how wide text is on a screen, and text cut or padded to a width in cells.

`fit` counts East Asian wide characters as two cells and combining marks as none, so a
line drawn by `corral watch` never wraps. It measures text already made safe by
`printable.clean` (control characters and escape sequences take no predictable width).
"""

from __future__ import annotations

import unicodedata

_ELLIPSIS = "…"


def cells(char: str) -> int:
    """How many terminal cells `char` takes: 2 wide, 0 combining, else 1."""
    if unicodedata.combining(char):
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def fit(text: str, width: int) -> str:
    """`text` (already clean) cut to at most `width` cells, ending in `…` when cut."""
    if width <= 0:
        return ""
    if text.isascii():  # the common case: one cell a character
        return text if len(text) <= width else text[: width - 1] + _ELLIPSIS
    if width_of(text) <= width:
        return text
    used, kept = 0, []
    for char in text:
        used += cells(char)
        if used > width - 1:
            break
        kept.append(char)
    return "".join(kept) + _ELLIPSIS


def pad(text: str, width: int) -> str:
    """`text` (already clean) fitted to `width` cells, then padded with spaces to fill them."""
    cut = fit(text, width)
    return cut + " " * (width - width_of(cut))


def width_of(text: str) -> int:
    """How many cells `text` (already clean) takes."""
    return len(text) if text.isascii() else sum(map(cells, text))
