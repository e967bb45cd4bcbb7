"""Users' text made safe for one terminal line: control characters escaped, length bounded."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral.foundation.printable import one_line, visible


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain title", "plain title"),
        ("\x1b[2J\x1b[31mred", "\\x1b[2J\\x1b[31mred"),
        ("two\nlines\r", "two\\nlines\\r"),
        ("tab\there", "tab\\there"),
        ("del\x7f c1\x9b", "del\\x7f c1\\x9b"),
        ("café ✓", "café ✓"),
    ],
)
def test_control_characters_are_shown_escaped_and_the_rest_as_it_is(raw: str, shown: str):
    """C0, DEL and C1 characters become their escapes; printable text, accents too, stays."""
    assert shown == one_line(raw)


def test_a_long_text_is_cut_to_the_width_with_an_ellipsis():
    """The result, ellipsis included, is at most `width` characters; a short one is whole."""
    assert "abcd…" == one_line("abcdefgh", 5)
    assert "abcde" == one_line("abcde", 5)
    assert 5 == len(one_line("\x1b" * 10, 5))


def test_visible_keeps_newlines_and_escapes_every_other_control_and_bidi_override():
    """A block of lines keeps its lines; ESC, BEL, C1 and U+202E are shown as escapes."""
    assert "a\\x1b[2J\nb\\x07\\x9b\\u202e" == visible("a\x1b[2J\nb\x07\x9b\u202e")
