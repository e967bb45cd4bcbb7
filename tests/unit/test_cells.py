"""Text for the watch screen: escape sequences and control characters removed, cut to a width
in terminal cells, never wrapped."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral.cli.cells import fit, pad, width_of
from corral.foundation.printable import clean


@pytest.mark.parametrize(
    ("hostile", "shown"),
    [
        ("\x1b[31mred\x1b[0m title", "red title"),  # colours (CSI)
        ("a\x1b[2J\x1b[Hb", "ab"),  # clear the screen, move home
        ("x\x1b]0;pwned\x07y", "xy"),  # window title (OSC ended by BEL)
        ("x\x1b]52;c;ZXZpbA==\x1b\\y", "xy"),  # clipboard write (OSC ended by ST)
        ("x\x1bPq#0;1\x1b\\y", "xy"),  # device control string
        ("x\x9b31my", "xy"),  # the 8-bit CSI
        ("x\x1b(0y", "x0y"),  # ESC + one byte: the byte after it is plain text again
        ("tab\there\r\nnext", "tab here  next"),  # whitespace controls become spaces
        ("bell\x07 nul\x00 del\x7f", "bell nul del"),
        ("abc\u202edcba", "abcdcba"),  # a right-to-left override reorders what follows
        ("trailing escape \x1b", "trailing escape "),
    ],
)
def test_clean_removes_what_would_control_the_terminal(hostile: str, shown: str) -> None:
    """Every sequence and control character goes; the visible text stays."""
    assert shown == clean(hostile)


def test_clean_keeps_printable_unicode() -> None:
    """Accents, wide characters and emoji are text, not controls."""
    assert "café 日本 ✓" == clean("café 日本 ✓")


@pytest.mark.parametrize(
    ("text", "width", "shown"),
    [
        ("short", 10, "short"),
        ("exactly10!", 10, "exactly10!"),
        ("much too long", 8, "much to…"),
        ("日本語テキスト", 6, "日本…"),  # two cells a character: 2 + 2 + the ellipsis
        ("日本", 4, "日本"),
        ("e\u0301e\u0301", 2, "e\u0301e\u0301"),  # combining accents take no cell
        ("anything", 0, ""),
    ],
)
def test_fit_cuts_to_cells_with_an_ellipsis(text: str, width: int, shown: str) -> None:
    """Nothing longer than `width` cells comes out; a cut line ends in `…`."""
    assert shown == fit(text, width)
    assert width_of(fit(text, width)) <= width


def test_pad_fills_the_cells_a_wide_text_leaves() -> None:
    """A column of wide characters lines up with one of narrow ones."""
    assert ["日本  ", "abcd  "] == [pad("日本", 6), pad("abcd", 6)]
    assert {6} == {width_of(pad(t, 6)) for t in ("日本", "abcd", "日本語テキスト")}
