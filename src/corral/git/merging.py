"""`Branches` (corral.reviews) over git: merge an approved branch into its base, safely.

The merge commit is built without touching any working tree: `git merge-tree
--write-tree` yields the merged tree (or the conflicting files, and then nothing changes),
`git commit-tree` the commit (two parents for `merge`, one for `squash`; the branch's own
head for `ff`). The base then moves to it: by a fast-forward inside the worktree that has
the base checked out (so its files follow), or by a compare-and-set `git update-ref` when
no worktree has it. The fast-forward is git's own, with git's own care for the checkout:
uncommitted changes the merge does not touch are carried over, and one it would overwrite
makes git refuse, changing nothing (checking the whole checkout first, as `git status`
does, cost more than the merge on a large repository: bench/landing.py). A file lock in
the repository's git directory (git/repo_lock.py) serializes merges, which all move the
same base; a merge takes the worktree lock inside it, never the other way round.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from corral.errors import Refused
from corral.git.worktrees import Worktrees
from corral.model.reviews import MergeStrategy
from corral.reviews import MergeAttempt

MERGE_LOCK = "corral-merge.lock"


class GitBranches:
    """The review flow's and landing's view of one repository."""

    def __init__(self, worktrees: Worktrees) -> None:
        self._trees = worktrees
        self._git = worktrees.git

    def head_of(self, branch: str) -> str | None:
        """The tip of local branch `branch`, or None."""
        return self._git.commit_of(f"refs/heads/{branch}")

    def is_merged(self, branch: str, base: str) -> bool:
        """Whether the base has every change of the branch (git/worktrees.py says how)."""
        return self._trees.is_merged(branch, base)

    def is_on_top(self, branch: str, base: str) -> bool:
        """Whether the base's tip is an ancestor of the branch (`git merge-base
        --is-ancestor`): merging it adds only the branch's own commits."""
        return self._git.ok("merge-base", "--is-ancestor", f"refs/heads/{base}", branch)

    def backups_of(self, branch: str) -> list[str]:
        """The backup refs written of `branch` before it was deleted with unmerged work."""
        return [ref for ref, _ in self._trees.backups(f"{branch}/")]

    def contains(self, base: str, commit: str) -> bool:
        """Whether `commit` is on local branch `base` (its tip or an ancestor of it)."""
        return self._git.ok("merge-base", "--is-ancestor", commit, f"refs/heads/{base}")

    def restore_branch(self, branch: str, ref: str) -> bool:
        """Make `branch` again at backup `ref` (git/worktrees.py: restore); whether it did."""
        commit = self._git.commit_of(ref)
        return commit is not None and self._trees.restore(branch, commit)

    def diff_stat(self, base: str, branch: str) -> str:
        """What the branch changes since it left the base."""
        return self._git.out("diff", "--stat", f"{base}...{branch}")

    def diff(self, base: str, branch: str) -> str:
        """Every change of the branch since it left the base, as a patch."""
        return self._git.out("diff", f"{base}...{branch}")

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold `corral-merge.lock` in the repository's common git directory."""
        with self._trees.lock(MERGE_LOCK).held():
            yield

    def merge(
        self, *, branch: str, base: str, strategy: MergeStrategy, message: str
    ) -> MergeAttempt:
        """Merge, or return the conflicts having changed nothing."""
        old, old_tree, head = self._tips(base, branch)
        checkout = self._trees.path_of(base)
        tree = self._git.run(
            "merge-tree", "--write-tree", "--name-only", "--no-messages", old, head
        )
        if tree.code == 1:
            files = tuple(dict.fromkeys(line for line in tree.out.splitlines()[1:] if line))
            return MergeAttempt(conflicts=files)
        if tree.code != 0:
            raise Refused(f"cannot merge {branch} into {base}: {tree.err.strip()}")
        merged_tree = tree.out.split()[0]
        if merged_tree == old_tree:
            # The base has it all already: a merge recorded in git whose recording in the
            # store was cut short (the process killed between the two). No second commit;
            # the commit named is the branch's own when the base has it, never a later one.
            on_base = self._git.ok("merge-base", "--is-ancestor", head, old)
            return MergeAttempt(merged_commit=head if on_base else old)
        new = self._commit(
            strategy, merged_tree, base=old, head=head, message=message, branch=branch
        )
        if checkout is not None:
            self._fast_forward(checkout, base, new)
        else:
            self._git.out("update-ref", "-m", message, f"refs/heads/{base}", new, old)
        return MergeAttempt(merged_commit=new)

    def _tips(self, base: str, branch: str) -> tuple[str, str, str]:
        """The base's commit and tree and the branch's head, read at once (one git process:
        a land's time is mostly processes started, bench/landing.py)."""
        refs = (f"refs/heads/{base}", f"refs/heads/{base}^{{tree}}", f"refs/heads/{branch}")
        found = self._git.run("rev-parse", *refs)
        names = found.out.split()
        if found.code == 0 and len(names) == len(refs):
            return names[0], names[1], names[2]
        if self._git.commit_of(refs[0]) is None:
            raise Refused(f"base {base} is not a local branch of {self._trees.root}")
        raise Refused(f"branch {branch} does not exist in {self._trees.root}")

    def _fast_forward(self, checkout: str, base: str, new: str) -> None:
        """Move the checked-out base to `new`, its files with it; git refuses (and so do
        we) when that would overwrite uncommitted changes, or when the base moved since."""
        moved = self._git.at(checkout).run("merge", "--ff-only", "--quiet", new)
        if moved.code == 0:
            return
        files = [line.strip() for line in moved.err.splitlines() if line.startswith("\t")]
        if files:
            raise Refused(
                f"the checkout of {base} at {checkout} has uncommitted changes to "
                f"{', '.join(files)}: commit or stash them, then merge again"
            )
        lines = moved.err.strip().splitlines() or [f"exit status {moved.code}"]
        raise Refused(f"cannot move {base} at {checkout}: {lines[0]}")

    def _commit(
        self, strategy: MergeStrategy, tree: str, *, base: str, head: str, message: str, branch: str
    ) -> str:
        if strategy is MergeStrategy.FF:
            if not self._git.ok("merge-base", "--is-ancestor", base, head):
                raise Refused(
                    f"branch {branch} does not contain the base's latest commit, so it cannot be "
                    "fast-forwarded: merge with --strategy merge or squash, or update the branch"
                )
            return head
        parents = ["-p", base] + (["-p", head] if strategy is MergeStrategy.MERGE else [])
        return self._git.out("commit-tree", tree, *parents, "-m", message)

    def clean_up(self, *, branch: str, base: str, worktree_path: str | None) -> list[str]:
        """Remove the branch's worktree (wherever it is) and the branch; the backups written."""
        backups = []
        for path in {worktree_path, self._trees.path_of(branch)}:
            if path and self._trees.manages(path):
                saved = self._trees.remove(path)
                backups += [saved] if saved else []
        saved = self._trees.delete_branch(branch, base)
        return backups + ([saved] if saved else [])
