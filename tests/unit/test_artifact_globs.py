"""Artifact globs are checked when a worker starts: relative, inside the working directory."""

from __future__ import annotations

import pytest

from corral import InvalidInput
from corral.model.artifacts import check_pattern


@pytest.mark.parametrize("pattern", ["out/*.txt", "**/*.json", "report.html", ".coverage", "a..b"])
def test_relative_globs_are_accepted(pattern: str) -> None:
    """A glob that names files below the working directory is kept as it is."""
    assert pattern == check_pattern(pattern)


@pytest.mark.parametrize("pattern", ["", "/etc/*", "../x", "out/../../x", "a\x00b", "a\x1b[2J"])
def test_globs_that_could_leave_or_are_not_text_are_refused(pattern: str) -> None:
    """Absolute, `..` parts, empty, NUL or escape characters: InvalidInput naming artifacts."""
    with pytest.raises(InvalidInput, match=r"^artifacts: expected"):
        check_pattern(pattern)
