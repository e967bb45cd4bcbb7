"""Before a land's verify step: the base of record merged into the task's branch, in its
worktree, so the step checks what the land will put on the base (the base keeps green).

    branch already holds the base's tip ─► nothing
    otherwise                           ─► `git merge --no-edit BASE` in the worktree (the
                                           remote's base, fetched, with `[worktree] remote`)
    that merge conflicts, or git refuses ─► undone (`git merge --abort`): the branch is as
                                           the agent left it, and the land reports the
                                           conflict as it always has

Only for a land (`worktree.land = merge`, a task without review): a branch in review stays
as its agent made it. The base commit merged in is what the land is then built on (its
`onto`): when the base moved on during the verify step, the land builds nothing, and the
runner merges the new base in and verifies again (runtime/worker/worktree_job.py), so
what reaches the base is always what a verify step passed.
"""

from __future__ import annotations

from corral.git.worktrees import Worktrees


def merge_base_in(trees: Worktrees, path: str, base: str) -> str | None:
    """Merge the base of record into the branch checked out at `path`; the base commit the
    branch now holds, or None when it could not be merged in."""
    ref = base
    if trees.remote is not None:
        trees.remote.fetch(base)
        ref = trees.remote.tracking(base)
    tip = trees.git.commit_of(ref)
    if tip is None:
        return None
    here = trees.git.at(path)
    if here.ok("merge-base", "--is-ancestor", tip, "HEAD"):
        return tip
    shown = base if trees.remote is None else trees.remote.shown(base)
    message = f"Merge {shown} before landing"
    merged = here.run("merge", "--no-edit", "--quiet", "-m", message, tip, env=here.identity_env())
    if merged.code == 0:
        return tip
    here.run("merge", "--abort")
    return None
