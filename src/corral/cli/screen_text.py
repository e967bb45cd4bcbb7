"""Text made safe for a terminal screen: no escape sequences, no control characters, and cut
to a width in terminal cells.

Task titles and output lines are written by whoever enqueues or runs a task. Drawn as they
are, an escape sequence could move the cursor, recolour the screen, retitle the window or
smuggle an OSC 52 clipboard write; a newline or a tab would break the layout. `clean`
removes every such sequence and character (bidirectional overrides, which reorder what
follows them, too); `fit` counts East Asian wide characters as two cells and combining
marks as none, so a line never wraps.
"""

from __future__ import annotations

import re
import unicodedata

# ESC or the 8-bit CSI/OSC/DCS introducers, with what they introduce: a CSI's parameters
# and final byte, an OSC/DCS/PM/APC string up to BEL or ST, or the one byte after ESC.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[]PX^_]|[\x90\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -~]?"
)
_SPACES = frozenset("\t\n\r\v\f")
_ELLIPSIS = "…"


def clean(text: str) -> str:
    """`text` without escape sequences or control and format characters; whitespace
    controls (tab, newline) become one space each."""
    out = []
    for char in _SEQUENCE.sub("", text):
        if char in _SPACES:
            out.append(" ")
        elif unicodedata.category(char) not in ("Cc", "Cf", "Cs", "Co", "Cn"):
            out.append(char)
    return "".join(out)


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
