"""Artifact globs are checked when a worker starts: relative, inside the working directory."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from corral import InvalidInput
from corral.model.artifacts import check_pattern
from corral.runtime.worker.artifacts import collect


@pytest.mark.parametrize("pattern", ["out/*.txt", "**/*.json", "report.html", ".coverage", "a..b"])
def test_relative_globs_are_accepted(pattern: str) -> None:
    """A glob that names files below the working directory is kept as it is."""
    assert pattern == check_pattern(pattern)


@pytest.mark.parametrize("pattern", ["", "/etc/*", "../x", "out/../../x", "a\x00b", "a\x1b[2J"])
def test_globs_that_could_leave_or_are_not_text_are_refused(pattern: str) -> None:
    """Absolute, `..` parts, empty, NUL or escape characters: InvalidInput naming artifacts."""
    with pytest.raises(InvalidInput, match=r"^artifacts: expected"):
        check_pattern(pattern)


def test_double_star_neither_enters_linked_folders_nor_loops(tmp_path: Path) -> None:
    """`**` walks the working directory's own folders: a link to `/` or a loop back to the
    top is passed by (glob.glob's `**` would follow them), hidden folders only when named."""
    work = tmp_path / "work"
    (work / "a" / "b").mkdir(parents=True)
    (work / ".git").mkdir()
    (work / "a" / "root").symlink_to("/")
    (work / "a" / "loop").symlink_to("..")
    for rel in ("a/one.txt", "a/b/two.txt", ".git/three.txt", "a/b/four.bin"):
        (work / rel).write_text(rel)
    found = collect(("**/*.txt", "a/*/*.bin"), cwd=str(work), dest=str(tmp_path / "out"),
                    max_bytes=1 << 20)  # fmt: skip
    assert ["a/b/two.txt", "a/one.txt", "a/b/four.bin"] == [a.path for a in found]
    assert hashlib.sha256(b"a/one.txt").hexdigest() == found[1].sha256
    assert [".git/three.txt"] == [
        a.path for a in collect((".git/*",), cwd=str(work), dest=str(tmp_path / "o2"), max_bytes=9)
    ]
