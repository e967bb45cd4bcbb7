"""Before a land's verify step: the base of record merged into the task's branch, in its
worktree, so the step checks what the land will put on the base (the base keeps green).

    branch already holds the base's tip ─► nothing
    otherwise                           ─► `git merge --no-edit BASE` in the worktree (the
                                           remote's base, fetched, with `[worktree] remote`)
    that merge conflicts, or git refuses ─► undone (`git merge --abort`): the branch is as
                                           the agent left it, and the land reports the
                                           conflict as it always has

Only for a land (`worktree.land = merge`, a task without review): a branch in review stays
as its agent made it. The base may still move between this merge and the land; the land's
own merge then adds what came since, which the step has not seen (a window of one verify).
"""

from __future__ import annotations

from corral.git.worktrees import Worktrees


def merge_base_in(trees: Worktrees, path: str, base: str) -> bool:
    """Merge the base of record into the branch checked out at `path`; whether the branch
    now holds the base's tip."""
    ref = base
    if trees.remote is not None:
        trees.remote.fetch(base)
        ref = trees.remote.tracking(base)
    here = trees.git.at(path)
    if here.ok("merge-base", "--is-ancestor", ref, "HEAD"):
        return True
    shown = base if trees.remote is None else trees.remote.shown(base)
    merged = here.run("merge", "--no-edit", "--quiet", "-m", f"Merge {shown} before landing", ref)
    if merged.code == 0:
        return True
    here.run("merge", "--abort")
    return False
