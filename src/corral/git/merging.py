"""`Branches` (corral.usecases.reviews) over git: merge an approved branch into its base, safely.

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

With a remote of record (`[worktree] remote`, git/remote_base.py) the same merge is built
on the remote's base as last fetched and pushed there, never forced: a push the remote
refuses because its base moved fetches, merges again and pushes again (at most
PUSH_ATTEMPTS times; a merge to be built `onto` a verified base commit builds nothing on
another: `moved`, and the runner verifies again), and a conflict found on a base that was
not just fetched is checked again on a fresh one. The local branch of the base does not
move. Task branches are read from the remote's copy when it has one (another host may have
run the task), except by a runner landing its own branch (`local_branches`), which saves
the fetch.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from corral.foundation.errors import Refused
from corral.git.remote_base import RemoteBase
from corral.git.repo_lock import MERGE_LOCK
from corral.git.worktrees import Worktrees
from corral.model.reviews import MergeStrategy
from corral.usecases.reviews import MergeAttempt

# Pushes to the remote's base that may be refused because another host moved it first.
PUSH_ATTEMPTS = 10


class GitBranches:
    """The review flow's and landing's view of one repository."""

    def __init__(self, worktrees: Worktrees, *, local_branches: bool = False) -> None:
        self._trees = worktrees
        self._git = worktrees.git
        self._remote = worktrees.remote
        self._local_first = local_branches
        self._fetched_all = False  # every branch of the remote fetched, by this instance

    def head_of(self, branch: str) -> str | None:
        """The tip of task branch `branch` (the remote's copy when it has one), or None."""
        return self._git.commit_of(self._branch_ref(branch))

    def is_merged(self, branch: str, base: str) -> bool:
        """Whether the base of record has every change of the branch (git/worktrees.py)."""
        self._base_ref(base)  # fetched, with a remote
        return self._trees.is_merged(self._branch_ref(branch), base)

    def is_on_top(self, branch: str, base: str) -> bool:
        """Whether the base's tip is an ancestor of the branch (`git merge-base
        --is-ancestor`): merging it adds only the branch's own commits."""
        return self._git.ok(
            "merge-base", "--is-ancestor", self._base_ref(base), self._branch_ref(branch)
        )

    def _branch_ref(self, branch: str) -> str:
        """The ref of task branch `branch`: the remote's copy, fetched, when it has one."""
        local = f"refs/heads/{branch}"
        if self._remote is None or self._local_first:
            return local
        self._fetch_all(self._remote)
        theirs = self._remote.tracking(branch)
        return theirs if self._git.commit_of(theirs) else local

    def _base_ref(self, base: str) -> str:
        """The ref of the base of record: the local branch, or the remote's, fetched."""
        if self._remote is None:
            return f"refs/heads/{base}"
        self._fetch_all(self._remote)
        return self._remote.tracking(base)

    def _fetch_all(self, remote: RemoteBase) -> None:
        """Every branch of the remote, once per instance: one round trip, however many
        branches a listing (`corral branches`) then reads."""
        if not self._fetched_all:
            remote.fetch_all()
            self._fetched_all = True

    def named(self, base: str) -> str:
        """How a task's worktree names the base of record: `NAME/BASE` with a remote."""
        return base if self._remote is None else self._remote.shown(base)

    def backups_of(self, branch: str) -> list[str]:
        """The backup refs written of `branch` before it was deleted with unmerged work."""
        return [ref for ref, _ in self._trees.backups(f"{branch}/")]

    def contains(self, base: str, commit: str) -> bool:
        """Whether `commit` is on local branch `base` (its tip or an ancestor of it)."""
        return self._git.ok("merge-base", "--is-ancestor", commit, f"refs/heads/{base}")

    def restore_branch(self, branch: str, ref: str) -> bool:
        """Make `branch` again at backup `ref` (git/worktrees.py: restore); whether it did."""
        commit = self._trees.backup_commit(ref)  # fetched from the remote of record if need be
        return commit is not None and self._trees.restore(branch, commit)

    def diff_stat(self, base: str, branch: str) -> str:
        """What the branch changes since it left the base."""
        return self._git.out("diff", "--stat", self._range(base, branch))

    def diff(self, base: str, branch: str) -> str:
        """Every change of the branch since it left the base, as a patch."""
        return self._git.out("diff", self._range(base, branch))

    def landed_diff(self, base: str, commit: str, *, stat: bool) -> str | None:
        """What landed `commit` changed on `base` (against its first parent); None when
        the base of record, fetched, does not hold the commit."""
        on_base = self._base_ref(base)
        if self._git.commit_of(commit) is None or not self._git.ok(
            "merge-base", "--is-ancestor", commit, on_base
        ):
            return None
        return self._git.out("diff", *(["--stat"] if stat else []), f"{commit}^1", commit)

    def _range(self, base: str, branch: str) -> str:
        """`BASE...BRANCH` (the base as recorded, a branch or a commit; the remote's, with one)."""
        shown = base if self._remote is None else self._base_ref(base)
        return f"{shown}...{self._branch_ref(branch)}"

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold `corral-merge.lock` in the repository's common git directory."""
        with self._trees.lock(MERGE_LOCK).held():
            yield

    def merge(
        self,
        *,
        branch: str,
        base: str,
        strategy: MergeStrategy,
        message: str,
        onto: str | None = None,
    ) -> MergeAttempt:
        """Merge, or return the conflicts having changed nothing; with `onto`, only onto
        that base commit (a verified one), `moved` when the base is elsewhere."""
        if self._remote is not None:
            return self._merge_remote(
                self._remote, branch=branch, base=base, strategy=strategy, message=message,
                onto=onto,
            )  # fmt: skip
        old, old_tree, head = self._tips(f"refs/heads/{base}", base, branch)
        if onto is not None and old != onto:
            return MergeAttempt(moved=True)
        checkout = self._trees.path_of(base)
        built = self._build(old, old_tree, head, strategy, message=message, branch=branch)
        if built.conflicts or built.merged_commit == old:
            return built
        assert built.merged_commit is not None
        if checkout is not None:
            self._fast_forward(checkout, base, built.merged_commit)
        else:
            self._git.out(
                "update-ref", "-m", message, f"refs/heads/{base}", built.merged_commit, old
            )
        return built

    def _merge_remote(
        self,
        remote: RemoteBase,
        *,
        branch: str,
        base: str,
        strategy: MergeStrategy,
        message: str,
        onto: str | None,
    ) -> MergeAttempt:
        """The merge built on the remote's base and pushed there (the module says how)."""
        tracking, branch_ref = remote.tracking(base), self._branch_ref(branch)
        fresh = self._fetched_all
        for _ in range(PUSH_ATTEMPTS):
            tips = self._read_tips(tracking, branch_ref)
            if tips is None and not fresh:  # this host has not fetched the base yet
                fresh = self._fetch(remote, base)
                continue
            old, old_tree, head = tips or self._tips(tracking, base, branch_ref)
            if onto is not None and old != onto:  # moved since the verify step's fetch
                return MergeAttempt(moved=True)
            built = self._build(old, old_tree, head, strategy, message=message, branch=branch)
            if built.conflicts and not fresh:  # perhaps only with a base since moved on
                fresh = self._fetch(remote, base)
                continue
            if built.conflicts or built.merged_commit == old:
                return built
            assert built.merged_commit is not None
            if remote.push_base(built.merged_commit, base):
                return built
            fresh = self._fetch(remote, base)
        raise Refused(
            f"the base {base} of remote {remote.name} kept moving: {PUSH_ATTEMPTS} pushes of "
            f"{branch} were refused; land it again"
        )

    def _fetch(self, remote: RemoteBase, base: str) -> bool:
        remote.fetch(base)
        return True

    def _build(
        self,
        old: str,
        old_tree: str,
        head: str,
        strategy: MergeStrategy,
        *,
        message: str,
        branch: str,
    ) -> MergeAttempt:
        """The merged commit of `head` onto base commit `old` (built, not yet the base's),
        `old` itself when the base has it all already, or the conflicting files."""
        tree = self._git.run(
            "merge-tree", "--write-tree", "--name-only", "--no-messages", old, head
        )
        if tree.code == 1:
            files = tuple(dict.fromkeys(line for line in tree.out.splitlines()[1:] if line))
            return MergeAttempt(conflicts=files)
        if tree.code != 0:
            raise Refused(f"cannot merge {branch} onto {old[:12]}: {tree.err.strip()}")
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
        return MergeAttempt(merged_commit=new)

    def _tips(self, base_ref: str, base: str, branch: str) -> tuple[str, str, str]:
        """The base's commit and tree and the branch's head, read at once (one git process:
        a land's time is mostly processes started, bench/landing.py)."""
        branch_ref = branch if branch.startswith("refs/") else f"refs/heads/{branch}"
        tips = self._read_tips(base_ref, branch_ref)
        if tips is not None:
            return tips
        if self._git.commit_of(base_ref) is None:
            where = "a local branch" if self._remote is None else f"a branch of {self._remote.name}"
            raise Refused(f"base {base} is not {where} of {self._trees.root}")
        raise Refused(
            f"branch {branch.removeprefix('refs/heads/')} does not exist in {self._trees.root}"
        )

    def _read_tips(self, base_ref: str, branch_ref: str) -> tuple[str, str, str] | None:
        """`_tips`, or None when a ref is missing."""
        refs = (base_ref, f"{base_ref}^{{tree}}", branch_ref)
        found = self._git.run("rev-parse", *refs)
        names = found.out.split()
        if found.code == 0 and len(names) == len(refs):
            return names[0], names[1], names[2]
        return None

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
        env = self._git.identity_env()
        return self._git.out("commit-tree", tree, *parents, "-m", message, env=env)

    def clean_up(self, *, branch: str, base: str, worktree_path: str | None) -> list[str]:
        """Remove the branch's worktree (wherever it is) and the branch; the backups written."""
        backups = []
        for path in {worktree_path, self._trees.path_of(branch)}:
            if path and self._trees.manages(path):
                saved = self._trees.remove(path)
                backups += [saved] if saved else []
        saved = self._trees.delete_branch(branch, base)
        if self._remote is not None:
            self._remote.unpublish(branch)
        return backups + ([saved] if saved else [])
