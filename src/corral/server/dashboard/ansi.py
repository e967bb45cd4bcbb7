"""Terminal output as HTML: ANSI colours become classes, every other escape goes.

An agent's or a command's output holds SGR sequences (`ESC[1;31m`: bold red), cursor
moves, OSC titles and stray control characters. The text between them is escaped; SGR
bold, dim, italic, underline and the eight foreground colours (bright ones as their
plain colour) become `ansi-*` classes of the stylesheet (no style attribute: the CSP
forbids them); 256-colour and RGB colours, backgrounds and anything else are dropped.
Nothing of an escape sequence ever reaches the page as text.
"""

from __future__ import annotations

import re

from markupsafe import Markup, escape

_SEQUENCE = re.compile(
    r"\x1b\[([0-9;:?<=>]*)[ -/]*([@-~])"  # CSI: SGR when it ends in m
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC (titles, links), ended by BEL or ST
    r"|\x1b[ -/]*[0-~]?"  # any other escape
    r"|[\x00-\x08\x0b-\x1f\x7f]"  # control characters but tab and newline
)
_FLAGS = {1: "ansi-bold", 2: "ansi-dim", 3: "ansi-italic", 4: "ansi-underline"}
_UNSET = {22: ("ansi-bold", "ansi-dim"), 23: ("ansi-italic",), 24: ("ansi-underline",)}


def to_html(text: str) -> Markup:
    """`text` escaped, its SGR styles as spans of classes, every other escape removed."""
    parts: list[str] = []
    classes: list[str] = []
    at = 0
    for match in _SEQUENCE.finditer(text):
        _append(parts, text[at : match.start()], classes)
        at = match.end()
        if match.group(2) == "m":
            classes = _styled(classes, match.group(1))
    _append(parts, text[at:], classes)
    return Markup("".join(parts))  # noqa: S704 - every piece of text went through escape()


def _append(parts: list[str], text: str, classes: list[str]) -> None:
    if not text:
        return
    if classes:
        parts.append(f'<span class="{" ".join(classes)}">{escape(text)}</span>')
    else:
        parts.append(str(escape(text)))


def _styled(classes: list[str], raw: str) -> list[str]:
    """The classes after SGR parameters `raw` (`1;31`); extended colours are skipped."""
    codes = [int(p) if p.isdigit() else 0 for p in re.split("[;:]", raw)] if raw else [0]
    found = list(classes)
    skip = 0
    for index, code in enumerate(codes):
        if index < skip:
            continue
        if code in (38, 48):  # 38;5;N or 38;2;R;G;B: a colour this page does not show
            skip = index + (3 if codes[index + 1 : index + 2] == [5] else 5)
            continue
        found = _one(found, code)
    return found


def _one(classes: list[str], code: int) -> list[str]:
    if code == 0:
        return []
    if code in _FLAGS:
        return [*classes, _FLAGS[code]]
    if code in _UNSET:
        return [c for c in classes if c not in _UNSET[code]]
    colour = code - 30 if 30 <= code <= 37 else code - 90 if 90 <= code <= 97 else None
    if colour is not None or code == 39:
        kept = [c for c in classes if not c.startswith("ansi-fg-")]
        return kept if colour is None else [*kept, f"ansi-fg-{colour}"]
    return classes
