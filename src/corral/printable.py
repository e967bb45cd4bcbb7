"""Text from users' data made safe for a terminal line: no control characters, bounded.

A task title or an error comes from whoever wrote it: an escape sequence in it, printed
raw, would move the cursor, recolour or clear a terminal, or forge a line of output.
`one_line` shows each control character (C0, DEL, C1: escape sequences and newlines
included) as its Python escape, `\\x1b`, `\\n`, and shortens the result to a width.
"""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
ELLIPSIS = "…"


def one_line(text: str, width: int | None = None) -> str:
    """`text` with control characters escaped, cut to `width` characters (ending in …)."""
    shown = _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
    if width is not None and len(shown) > width:
        return shown[: max(0, width - 1)] + ELLIPSIS
    return shown
