"""Keeping corral's own folder out of git.

`corral init` in a repository adds `.corral/` to the repository's `info/exclude`: git then
never shows the store, its `-wal` and `-shm` files, the pid file, the logs or the runs in
`git status`, and an agent's `git add -A` cannot commit them. `info/exclude` belongs to
the repository, not to its history: no tracked file (no `.gitignore`) is touched, and the
one file serves the main working tree and every linked worktree. The pattern is not
anchored, so a `.corral/` at any depth of any of them is excluded too.

corral writes there only for a folder named `.corral` (its own, `store/location.py`), only
inside a work tree, and only when git does not ignore that folder already.
"""

from __future__ import annotations

import os

from corral.git.repo import Git, GitFailed, GitUnavailable
from corral.store.location import DEFAULT_DIR

PATTERN = f"{DEFAULT_DIR}/"
COMMENT = "# corral's own folder: its store, logs and runs (added by `corral init`)"


def exclude_state_dir(folder: str) -> str | None:
    """Exclude corral's `folder` from the git work tree it lies in (module doc); the
    exclude file written, or None when there was nothing to do (no git, not in a work
    tree, not corral's folder, already ignored). GitFailed when it could not be written."""
    folder = os.path.abspath(folder)
    if os.path.basename(folder) != DEFAULT_DIR:
        return None
    parent = os.path.dirname(folder)
    if not os.path.isdir(parent):
        return None
    try:
        git = Git(parent)
    except GitUnavailable:  # corral works without git; there is just nothing to exclude from
        return None
    if git.run("rev-parse", "--is-inside-work-tree").out.strip() != "true":
        return None
    if git.ok("check-ignore", "--quiet", "--no-index", PATTERN):
        return None
    exclude = git.out("rev-parse", "--path-format=absolute", "--git-path", "info/exclude")
    try:
        os.makedirs(os.path.dirname(exclude), exist_ok=True)
        _append(exclude, f"{COMMENT}\n{PATTERN}\n")
    except OSError as exc:
        raise GitFailed(f"cannot add {PATTERN} to {exclude}: {exc.strerror}") from None
    return exclude


def _append(path: str, lines: str) -> None:
    """Add `lines` at the end of `path` (a small file), on lines of their own."""
    try:
        with open(path, "rb") as existing:
            text = existing.read()
    except FileNotFoundError:
        text = b""
    with open(path, "a", encoding="utf-8") as out:
        out.write(("\n" if text and not text.endswith(b"\n") else "") + lines)
