"""Text from users' data made safe for a terminal line: no control characters, bounded.

A task title or an error comes from whoever wrote it: an escape sequence in it, printed
raw, would move the cursor, recolour or clear a terminal, or forge a line of output.
`one_line` shows each control character (C0, DEL, C1: escape sequences and newlines
included) as its Python escape, `\\x1b`, `\\n`, and shortens the result to a width.
"""

from __future__ import annotations

# Code point -> its escape, for str.translate (cheaper to build at import than a regex).
_ESCAPES = {c: repr(chr(c))[1:-1] for c in (*range(0x20), *range(0x7F, 0xA0))}
ELLIPSIS = "…"


def one_line(text: str, width: int | None = None) -> str:
    """`text` with control characters escaped, cut to `width` characters (ending in …)."""
    shown = text.translate(_ESCAPES)
    if width is not None and len(shown) > width:
        return shown[: max(0, width - 1)] + ELLIPSIS
    return shown
