"""Text from users' data made safe for a terminal: control characters never obeyed.

A task title, an error, a version, a host name or an output line comes from whoever wrote
it: an escape sequence in it, printed raw, would move the cursor, recolour or clear a
terminal, retitle the window, smuggle an OSC 52 clipboard write, or forge a line of
output. Every sanitiser of corral is here, in two policies:

- **shown**, for output read as lines: `one_line` shows each control character (C0, DEL,
  C1: escape sequences and newlines included) and each bidirectional override (which
  would reorder what follows it) as its Python escape, `\\x1b`, `\\n`, `\\u202e`, and
  shortens the result to a width. `visible` does the same to a block of corral's own
  lines, keeping their newlines: the last guard of every human output (`Context.emit`),
  behind the tables and fields that put each value on one line. A reader sees that
  something was there.
- **removed**, for a screen drawn in cells (`corral watch`): `clean` drops every escape
  sequence and every control and format character (bidirectional overrides too), and
  turns a tab or newline into a space, so a value never breaks the layout it is drawn
  in; cli/cells.py then cuts it to a width in cells.

JSON output is exact, never passed through either.
"""

from __future__ import annotations

import re

# Code point -> its escape, for str.translate (cheaper to build at import than a regex).
_CONTROLS = (*range(0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_ESCAPES = {c: repr(chr(c))[1:-1] if c < 0x100 else f"\\u{c:04x}" for c in _CONTROLS}
_BLOCK_ESCAPES = {c: e for c, e in _ESCAPES.items() if c != ord("\n")}
ELLIPSIS = "…"

# ESC or the 8-bit CSI/OSC/DCS introducers, with what they introduce: a CSI's parameters
# and final byte, an OSC/DCS/PM/APC string up to BEL or ST, or the one byte after ESC.
# Compiled on first use (re's own cache): every command imports this module, few clean.
_SEQUENCE = (
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[]PX^_]|[\x90\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[ -~]?"
)
_SPACES = frozenset("\t\n\r\v\f")


def one_line(text: str, width: int | None = None) -> str:
    """`text` with control characters escaped, cut to `width` characters (ending in …)."""
    shown = text.translate(_ESCAPES)
    if width is not None and len(shown) > width:
        return shown[: max(0, width - 1)] + ELLIPSIS
    return shown


def visible(text: str) -> str:
    """`text` with every control character but the newline escaped."""
    return text.translate(_BLOCK_ESCAPES)


def clean(text: str) -> str:
    """`text` without escape sequences or control and format characters; whitespace
    controls (tab, newline) become one space each.

    What `str.isprintable` refuses is a control, format, surrogate, private-use or
    unassigned character, or a separator; the separators above U+00A0 (no-break and wide
    spaces, line and paragraph separators) are kept, the controls below it are not."""
    out = []
    for char in re.sub(_SEQUENCE, "", text):
        if char in _SPACES:
            out.append(" ")
        elif char.isprintable() or (char >= "\xa0" and char.isspace()):
            out.append(char)
    return "".join(out)
