"""What an agent left in its worktree, committed on the task's branch (`worktree.commit = auto`).

Agents differ: aider commits as it goes, Claude Code commits only when asked, Codex never
does. After a run that succeeded, corral commits every change the agent left, untracked
files too (`git add --all` honours `.gitignore`), on the task's branch, before it is
verified, landed or reviewed, so a run's work is always a commit. Never committed: corral's
own files, anything under a `.corral/` folder (its store, run output, worktrees) and the
files it wrote for the run (a prompt file) when they lie inside the worktree. The commit
runs the repository's hooks as any commit does: one that refuses fails the run, with the
tail of git's output. A merge the agent resolved but did not commit (`git merge BASE`
after a land conflict, the files settled) is committed as the merge it is, even when the
resolution leaves the branch's files as they were: else the branch would conflict again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from corral.foundation.errors import CorralError
from corral.git.repo import Git

OUTPUT_TAIL_CHARS = 500
# Corral's own folder, at any depth: `:(glob)**/` matches the top level too.
_CORRAL_FILES = ":(exclude,glob)**/.corral/**"


class CommitFailed(CorralError):
    """corral could not commit what the agent left (a hook refused, say)."""


def message_of(title: str, task_id: str, run_id: str) -> str:
    """The commit's message: the task's title, then which task and run made it."""
    return f"{title}\n\ncorral task {task_id}, run {run_id}"


def author_env(author: str) -> dict[str, str]:
    """`Name <email>` as git's author and committer variables (the commit is corral's)."""
    name, _, email = author.rpartition(" <")
    name, email = name.strip(), email.removesuffix(">")
    return {
        "GIT_AUTHOR_NAME": name,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": name,
        "GIT_COMMITTER_EMAIL": email,
    }


def commit_left(
    git: Git, *, message: str, author: str, written: Iterable[str | None] = ()
) -> str | None:
    """Commit everything uncommitted in the worktree `git` runs in, but corral's files and
    `written` (paths corral wrote for the run); the new commit, or None when nothing was
    left. CommitFailed when git refuses."""
    excluded = [_CORRAL_FILES] + [
        f":(exclude,literal){os.path.relpath(path, git.cwd)}"
        for path in written
        if path and _inside(path, git.cwd)
    ]
    staged = git.run("add", "--all", "--", ".", *excluded)
    if staged.code != 0:
        raise CommitFailed(_failure("git add", staged.err or staged.out))
    merging = git.ok("rev-parse", "--quiet", "--verify", "MERGE_HEAD")
    if not merging and git.ok("diff", "--cached", "--quiet"):
        return None
    done = git.run("commit", "--quiet", "--no-edit", "-m", message, env=author_env(author))
    if done.code != 0:
        raise CommitFailed(_failure("git commit", done.err or done.out))
    return git.out("rev-parse", "HEAD")


def _inside(path: str, folder: str) -> bool:
    here = os.path.realpath(folder)
    return os.path.realpath(path).startswith(here + os.sep)


def _failure(what: str, output: str) -> str:
    tail = output.strip()[-OUTPUT_TAIL_CHARS:]
    return f"corral could not commit what the agent left: {what} failed" + (
        f": {tail}" if tail else ""
    )
