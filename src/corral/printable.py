"""Text from users' data made safe for a terminal: control characters shown, not obeyed.

A task title, an error, a version or a host name comes from whoever wrote it: an escape
sequence in it, printed raw, would move the cursor, recolour or clear a terminal, retitle
the window, or forge a line of output. `one_line` shows each control character (C0, DEL,
C1: escape sequences and newlines included) and each bidirectional override (which would
reorder what follows it) as its Python escape, `\\x1b`, `\\n`, `\\u202e`, and shortens
the result to a width. `visible` does the same to a block of corral's own lines, keeping
their newlines: the last guard of every human output (`Context.emit`), behind the tables
and fields that put each value on one line. JSON output is exact, never passed through
either.
"""

from __future__ import annotations

# Code point -> its escape, for str.translate (cheaper to build at import than a regex).
_CONTROLS = (*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_ESCAPES = {c: repr(chr(c))[1:-1] if c < 0x100 else f"\\u{c:04x}" for c in _CONTROLS}
_BLOCK_ESCAPES = {c: e for c, e in _ESCAPES.items() if c != ord("\n")}
ELLIPSIS = "…"


def one_line(text: str, width: int | None = None) -> str:
    """`text` with control characters escaped, cut to `width` characters (ending in …)."""
    shown = text.translate(_ESCAPES)
    if width is not None and len(shown) > width:
        return shown[: max(0, width - 1)] + ELLIPSIS
    return shown


def visible(text: str) -> str:
    """`text` with every control character but the newline escaped."""
    return text.translate(_BLOCK_ESCAPES)
