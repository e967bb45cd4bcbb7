"""The one place corral runs `git`: argument lists, never a shell, and readable errors.

corral needs git 2.38 or newer: `git merge-tree --write-tree` tells whether a branch
merges cleanly (and which files conflict) without touching any working tree, and it
decides whether a branch's changes are already in the base after a squash merge.
Without git, or with an older one, every git command fails with `GitUnavailable`
(exit code 3, as for any missing tool).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass

from corral.foundation.errors import CorralError

MIN_VERSION = (2, 38)
# corral's name on the commits it makes that are nobody else's (backups), and on a merge
# where git knows no one (Git.identity_env).
CORRAL_IDENTITY = {
    "GIT_AUTHOR_NAME": "corral",
    "GIT_AUTHOR_EMAIL": "corral@localhost",
    "GIT_COMMITTER_NAME": "corral",
    "GIT_COMMITTER_EMAIL": "corral@localhost",
}
_checked: dict[str, tuple[int, ...]] = {}


class GitUnavailable(CorralError):
    """git is missing or too old."""

    exit_code = 3


class GitFailed(CorralError):
    """A git command failed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class GitResult:
    """What one git command returned."""

    code: int
    out: str
    err: str


def parse_version(text: str) -> tuple[int, ...]:
    """`git version 2.39.5` (or `2.39.5.windows.1`) -> (2, 39, 5)."""
    words = text.split()
    numbers = words[2].split(".") if len(words) >= 3 else []
    version = tuple(int(n) for n in numbers[:3] if n.isdigit())
    if len(version) < 2:
        raise GitUnavailable(f"git: cannot read its version from {text.strip()!r}")
    return version


def require_git(executable: str = "git") -> tuple[int, ...]:
    """git's version, checked once per process; GitUnavailable when missing or too old."""
    if executable in _checked:
        return _checked[executable]
    found = shutil.which(executable)
    if found is None:
        raise GitUnavailable(f"git: not found on PATH ({executable}); install git 2.38 or newer")
    proc = subprocess.run(  # noqa: S603 - an argument list, no shell
        [found, "--version"], capture_output=True, text=True, check=False
    )
    version = parse_version(proc.stdout)
    if version < MIN_VERSION:
        shown = ".".join(map(str, version))
        raise GitUnavailable(f"git {shown} is too old: corral needs git 2.38 or newer")
    _checked[executable] = version
    return version


class Git:
    """git commands run in one directory (a repository or one of its worktrees)."""

    def __init__(self, cwd: str, executable: str = "git") -> None:
        require_git(executable)
        self.cwd = cwd
        self._exe = executable

    def at(self, cwd: str) -> Git:
        """The same git, run in another directory."""
        return Git(cwd, self._exe)

    def run(
        self, *args: str, env: dict[str, str] | None = None, stdin: int | None = None
    ) -> GitResult:
        """Run `git ARGS` here and return its result, whatever its exit status (its input
        read from the file descriptor `stdin`, if given)."""
        full_env = {**os.environ, "LC_ALL": "C", **(env or {})}
        try:
            proc = subprocess.run(  # noqa: S603 - an argument list, no shell
                [self._exe, *args],
                cwd=self.cwd,
                stdin=stdin,
                capture_output=True,
                text=True,
                check=False,
                env=full_env,
            )
        except OSError as exc:  # the folder vanished, or git did
            raise GitFailed(f"git {args[0]} could not run in {self.cwd}: {exc.strerror}") from None
        return GitResult(code=proc.returncode, out=proc.stdout, err=proc.stderr)

    def out(self, *args: str, env: dict[str, str] | None = None) -> str:
        """Run `git ARGS` and return its stdout, stripped; GitFailed on a non-zero exit."""
        result = self.run(*args, env=env)
        if result.code != 0:
            detail = (result.err or result.out).strip().splitlines()
            reason = detail[-1] if detail else f"exit status {result.code}"
            raise GitFailed(f"git {args[0]} failed in {self.cwd}: {reason}")
        return result.out.strip()

    def identity_env(self) -> dict[str, str]:
        """What a commit corral makes on a person's behalf (a merge, a squash) needs: nothing
        when git knows who commits here (the user's identity, theirs to keep), corral's own
        identity when it does not. git refuses to commit without one ("unable to auto-detect
        email address"), which on a fresh account would fail every landing."""
        return {} if self.ok("var", "GIT_COMMITTER_IDENT") else dict(CORRAL_IDENTITY)

    def ok(self, *args: str) -> bool:
        """Whether `git ARGS` exits 0."""
        return self.run(*args).code == 0

    def commit_of(self, ref: str) -> str | None:
        """The commit `ref` names, or None when it names none."""
        result = self.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
        return result.out.strip() if result.code == 0 else None

    def common_dir(self) -> str:
        """The repository's common git directory (its `.git`), as an absolute path."""
        return self.out("rev-parse", "--path-format=absolute", "--git-common-dir")

    def toplevel(self, common: str | None = None) -> str:
        """The root of the repository's main working tree (not of a linked worktree), from
        its common git directory `common` when the caller has it already."""
        common = common or self.common_dir()
        if os.path.basename(common) == ".git":
            return os.path.dirname(common)
        return self.out("rev-parse", "--show-toplevel")
