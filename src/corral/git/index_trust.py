"""A new worktree's index made trustworthy by its timestamps, before its task runs.

`git worktree add` writes the files and then the index within the same second, so git
cannot tell from the timestamps that a file is unchanged (a "racily clean" entry: a file
edited in that second could keep its size and time), and every `git status` or `git add
-A` reads all the files again until the index is rewritten a second later. On 5,000 files
that is most of the commit step's time after a run (bench/land_remote.py). So, before the
task starts and while nothing else writes there, the checked-out files are dated two
seconds before the index and the index refreshed: each entry then records a time older
than the index, and a later edit (the agent's, at any moment after this) changes the
file's time, so git sees it. A file the index lists that is not there (a sparse checkout)
is left alone.
"""

from __future__ import annotations

import os

from corral.foundation.errors import CorralError
from corral.git.repo import Git

# How far before the index the files are dated: more than the one second git compares.
BEFORE_INDEX_S = 2


def trust_index(git: Git) -> None:
    """Date the files of the worktree `git` runs in before its index, then refresh it.
    Best effort: what fails here only leaves the index as git wrote it (slower, as safe)."""
    try:
        _date_and_refresh(git)
    except (CorralError, OSError, ValueError):  # ValueError: a name that is not UTF-8
        return


def _date_and_refresh(git: Git) -> None:
    index = git.out("rev-parse", "--path-format=absolute", "--git-path", "index")
    then = os.stat(index).st_mtime - BEFORE_INDEX_S
    for name in git.out("ls-files", "-z").split("\0"):
        if name:
            try:
                os.utime(os.path.join(git.cwd, name), (then, then), follow_symlinks=False)
            except OSError:  # not checked out (sparse), or a submodule not initialised
                continue
    git.run("update-index", "-q", "--refresh")
