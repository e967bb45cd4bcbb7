"""A new worktree's index is trusted by its timestamps (git/index_trust.py): no entry is
racily clean, and an edit made at once, keeping the file's size, is still seen."""

from __future__ import annotations

import os
import re
from pathlib import Path

from corral.git.index_trust import trust_index
from corral.git.repo import Git

from .conftest import git


def _fresh_worktree(repo: Path) -> Path:
    path = repo.parent / "wt"
    git(repo, "worktree", "add", "--quiet", "-b", "task", str(path), "main")
    return path


def test_every_entry_is_older_than_the_index(repo: Path) -> None:
    """After trust_index, each entry's recorded time is before the index file's own."""
    path = _fresh_worktree(repo)
    trust_index(Git(str(path)))
    index = git(path, "rev-parse", "--path-format=absolute", "--git-path", "index")
    written = int(os.stat(index).st_mtime)
    debug = git(path, "ls-files", "--debug")
    mtimes = [int(m) for m in re.findall(r"mtime: (\d+):", debug)]
    assert 2 == len(mtimes)
    assert all(m < written for m in mtimes)
    assert "" == git(path, "status", "--porcelain")


def test_an_edit_right_after_keeping_the_size_is_seen(repo: Path) -> None:
    """The racy case git guards against: same size, same second; the status shows it."""
    path = _fresh_worktree(repo)
    trust_index(Git(str(path)))
    (path / "README").write_text("HELLO\n")  # "hello\n", the same six bytes
    assert "M README" == git(path, "status", "--porcelain")


def test_a_file_not_checked_out_is_left_alone(repo: Path) -> None:
    """A listed file that is missing (deleted, or sparse) is skipped, not an error."""
    path = _fresh_worktree(repo)
    (path / "shared.txt").unlink()
    trust_index(Git(str(path)))
    assert "D shared.txt" == git(path, "status", "--porcelain")
