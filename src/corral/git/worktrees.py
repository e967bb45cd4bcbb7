"""Git worktrees, one per task, under `.corral/worktrees/` of the repository.

    plan(worker, task, branch) ─► a branch name and a path that are free (or the task's own
                                   branch again, resuming after changes were requested)
    create(plan)               ─► `git worktree add` from the base ref (or on the kept branch)
    remove(path)               ─► uncommitted work first saved as a backup ref, then removed
    delete_branch(branch)      ─► a backup ref first when the branch holds work the base lacks

Work is never lost by cleanup: a branch is "merged" when `git cherry` finds every commit's
patch in the base, or when merging it into the base would change nothing (a squash merge,
a cherry-pick). Anything else gets `refs/corral/backup/BRANCH/COMMIT` before it goes;
with a remote of record that ref is pushed there too before anything goes (a push the
remote refuses leaves the worktree or branch in place), so another host can restore it.
A removal, and `git worktree prune`, also bring in the object folder a sandboxed run of a
worktree now gone left behind (git/run_objects.py: its runner was killed first).
Planning is separate from creating so that a runner can record the branch in the store
first: `prune` then never mistakes a worktree being born for an orphan. Every change to the
worktrees and branches, and every listing of them, holds the repository's worktree lock
(git/repo_lock.py says why).
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from corral.foundation import filemodes
from corral.foundation.errors import InvalidInput, Refused
from corral.foundation.policies import WorktreePolicy
from corral.git import run_objects
from corral.git.remote_base import RemoteBase
from corral.git.repo import CORRAL_IDENTITY, Git
from corral.git.repo_lock import REMOTE_REFS_LOCK, WORKTREE_LOCK, RepoLock, repo_lock

BACKUP_PREFIX = "refs/corral/backup/"


@dataclass(frozen=True, slots=True, kw_only=True)
class WorktreeConfig:
    """Where worktrees go and how their branches are named (settings `[worktree]`)."""

    base_dir: str = ".corral/worktrees"  # relative to the repository's root
    branch_template: str = "corral/{worker}/{task}"
    remote: str = ""  # the remote of record (git/remote_base.py); empty: this repository


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    """A worktree to create: `reuse` when the path already holds the branch."""

    branch: str
    path: str
    base_ref: str
    existing_branch: bool
    reuse: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Worktree:
    """A worktree git knows, as `git worktree list --porcelain` describes it."""

    path: str
    branch: str | None
    head: str | None

    def to_dict(self) -> dict[str, str | None]:
        """The stable JSON shape (docs/cli.md)."""
        return {"path": self.path, "branch": self.branch, "head": self.head}


def _field(line: str) -> tuple[str, str]:
    """`worktree /path` -> ("worktree", "/path"); a bare word (`bare`, `locked`) -> (word, "")."""
    key, _, value = line.partition(" ")
    return key, value


def _invalid_branch(name: str) -> InvalidInput:
    """The error of a branch template that renders `name`, which git refuses."""
    return InvalidInput("worktree.branch_template", "a valid branch name", name)


def _within(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-.") or "task"


class Worktrees:
    """The worktrees and branches corral manages in one repository."""

    def __init__(self, git: Git, config: WorktreeConfig, *, common_dir: str = "") -> None:
        self.root = git.toplevel(common_dir)
        self.git = git.at(self.root)
        self.config = config
        self.base_dir = os.path.join(self.root, config.base_dir)
        self._common_dir: str | None = common_dir or None
        self.remote = (
            RemoteBase(self.git, config.remote, lambda: self.lock(REMOTE_REFS_LOCK))
            if config.remote
            else None
        )

    @classmethod
    def open(cls, path: str, policy: WorktreePolicy) -> Worktrees:
        """The repository containing `path`, managed as `policy` says."""
        if not os.path.isdir(path):
            raise InvalidInput("repo", "a folder inside a git repository", path)
        git = Git(os.path.abspath(path))
        found = git.run("rev-parse", "--path-format=absolute", "--git-common-dir")
        if found.code != 0:
            raise InvalidInput("repo", "a folder inside a git repository", path)
        config = WorktreeConfig(
            base_dir=policy.dir, branch_template=policy.branch_template, remote=policy.remote
        )
        return cls(git, config, common_dir=found.out.strip())

    def common_dir(self) -> str:
        """The repository's common git directory (its `.git`), where its lock files lie."""
        if self._common_dir is None:
            self._common_dir = self.git.common_dir()
        return self._common_dir

    def lock(self, name: str) -> RepoLock:
        """The lock file `name` of this repository (git/repo_lock.py)."""
        return repo_lock(self.common_dir(), name)

    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the repository's worktree lock: no other corral process or thread adds,
        removes or lists a worktree, or deletes a branch, meanwhile."""
        with self.lock(WORKTREE_LOCK).held():
            yield

    def check_policy(self, worker: str) -> None:
        """Refuse, before any task, settings that would fail every task: a branch template
        or a worker name that do not make a valid branch name (rendered for a sample task),
        and a worktree folder that is a file, the repository's root, outside it or in `.git`.
        """
        sample = "t-0123456789"
        branch = self._branch_name(worker, sample)
        if not self._valid_branch(branch):  # one git call when it is valid, as it mostly is
            if self._valid_branch(self._branch_name("w", sample)):
                raise InvalidInput("name", "a worker name git accepts in a branch name", worker)
            raise _invalid_branch(branch)
        where = os.path.realpath(self.base_dir)
        root = os.path.realpath(self.root)
        common = self.common_dir()
        dir_ = self.config.base_dir
        if where == root or not _within(where, root):
            raise InvalidInput("worktree.dir", f"a folder inside the repository {root}", dir_)
        if _within(where, os.path.realpath(common)):
            raise InvalidInput("worktree.dir", "a folder outside the repository's .git", dir_)
        if os.path.lexists(where) and not os.path.isdir(where):
            raise InvalidInput("worktree.dir", "a folder, not a file", dir_)

    def default_base(self) -> str:
        """The branch checked out in the repository's main working tree."""
        branch = self.checked_out()
        if branch is None:
            raise InvalidInput("base", "a branch (the repository's HEAD is detached): use --base")
        return branch

    def checked_out(self) -> str | None:
        """The branch checked out in the repository's main working tree, if one is."""
        return self.git.run("symbolic-ref", "--quiet", "--short", "HEAD").out.strip() or None

    # -- names -----------------------------------------------------------------------

    def branch_exists(self, branch: str) -> bool:
        """Whether local branch `branch` exists."""
        return self.git.ok("show-ref", "--verify", "--quiet", f"refs/heads/{branch}")

    def plan(self, worker: str, task_id: str, base_ref: str, branch: str | None) -> Plan:
        """Where the task's worktree goes; its own `branch` again when it has one that exists."""
        if self.git.commit_of(base_ref) is None:
            raise InvalidInput("base", "a branch or commit of the repository", base_ref)
        if branch and self.branch_exists(branch):
            current = self.path_of(branch)
            if current is not None and not self.manages(current):
                raise Refused(
                    f"branch {branch} is checked out at {current}, outside corral's worktrees: "
                    "check out another branch there first"
                )
            path, existing, reuse = current or self._free_path(branch), True, current is not None
        else:
            wanted = branch or self._branch_name(worker, task_id)
            branch = self._free_branch(wanted)
            path, existing, reuse = self._free_path(branch), False, False
        return Plan(
            branch=branch, path=path, base_ref=base_ref, existing_branch=existing, reuse=reuse
        )

    def _branch_name(self, worker: str, task_id: str) -> str:
        template = self.config.branch_template
        try:
            return template.format(worker=worker, task=task_id)
        except (KeyError, IndexError, ValueError):
            raise InvalidInput(
                "worktree.branch_template", "a template with only {worker} and {task}", template
            ) from None

    def _valid_branch(self, name: str) -> bool:
        return self.git.ok("check-ref-format", "--branch", name)

    def _free_branch(self, wanted: str) -> str:
        if not self._valid_branch(wanted):
            raise _invalid_branch(wanted)
        name, n = wanted, 1
        while self.branch_exists(name):
            n += 1
            name = f"{wanted}-{n}"
        return name

    def _free_path(self, branch: str) -> str:
        stem = os.path.join(self.base_dir, _slug(branch.replace("/", "-")))
        path, n = stem, 1
        while os.path.lexists(path):
            n += 1
            path = f"{stem}-{n}"
        return path

    # -- create and remove ----------------------------------------------------------------

    def create(self, plan: Plan) -> str:
        """Make the planned worktree; returns the commit it starts at."""
        if not plan.reuse:
            self._make_base_dir()
            with self.locked():
                if plan.existing_branch:
                    self.git.out("worktree", "add", "--quiet", plan.path, plan.branch)
                else:
                    self.git.out(
                        "worktree",
                        "add",
                        "--quiet",
                        "--no-track",
                        "-b",
                        plan.branch,
                        plan.path,
                        plan.base_ref,
                    )
        return self.git.at(plan.path).out("rev-parse", "HEAD")

    def _make_base_dir(self) -> None:
        """The worktrees' folder, with a `.gitignore` of `*` so the main checkout's
        `git status` does not list the worktrees inside it as untracked files."""
        filemodes.make_dirs(self.base_dir)
        ignore = os.path.join(self.base_dir, ".gitignore")
        if not os.path.exists(ignore):
            with open(ignore, "w", encoding="utf-8") as handle:
                handle.write("*\n")

    def remove(self, path: str) -> str | None:
        """Remove the worktree at `path`; a backup ref of its uncommitted work, if it had any."""
        with self.locked():
            if not os.path.isdir(path):
                self.git.out("worktree", "prune")
                self.sweep_objects()
                return None
            backup = self._save_uncommitted(path)
            if backup is not None:
                self._keep(backup)
            self.git.out("worktree", "remove", "--force", "--force", path)
            self.sweep_objects()
            return backup

    def sweep_objects(self) -> tuple[str, ...]:
        """The object folders of sandboxed runs whose worktree is gone brought into the
        repository (git/run_objects.py): a runner killed before it did; their names."""
        return run_objects.sweep(self.common_dir())

    def _keep(self, ref: str) -> None:
        """A backup ref pushed to the remote of record, if there is one."""
        if self.remote is not None:
            self.remote.keep(ref)

    def backup_commit(self, ref: str) -> str | None:
        """The commit of backup ref `ref`: here, else fetched from the remote of record."""
        commit = self.git.commit_of(ref)
        if commit is None and self.remote is not None:
            commit = self.remote.fetch_ref(ref)
        return commit

    def _save_uncommitted(self, path: str) -> str | None:
        """Commit everything in the worktree (untracked files too) to a backup ref, through a
        scratch index, so neither the branch nor the worktree's own index changes."""
        here = self.git.at(path)
        if not here.out("status", "--porcelain"):
            return None
        branch = here.run("symbolic-ref", "--quiet", "--short", "HEAD").out.strip() or "detached"
        with tempfile.TemporaryDirectory() as scratch:
            env = {**CORRAL_IDENTITY, "GIT_INDEX_FILE": os.path.join(scratch, "index")}
            here.out("read-tree", "HEAD", env=env)
            here.out("add", "--all", env=env)
            tree = here.out("write-tree", env=env)
            commit = here.out(
                "commit-tree",
                tree,
                "-p",
                "HEAD",
                "-m",
                f"corral: uncommitted work in {path}",
                env=env,
            )
        ref = f"{BACKUP_PREFIX}{branch}/wip-{commit[:12]}"
        self.git.out("update-ref", ref, commit)
        return ref

    def restore(self, branch: str, commit: str) -> bool:
        """Bring `branch` to backup `commit`: made again there when it is gone, moved
        forward when the commit descends from its head (a worktree's backup: its parent is
        the head). False, changing nothing, when the branch has the commit already, is
        checked out in a worktree (whose files are the newer truth) or went another way."""
        head = self.git.commit_of(f"refs/heads/{branch}")
        if head is None:
            with self.locked():
                self.git.out("branch", "--quiet", branch, commit)
            return True
        if self.git.ok("merge-base", "--is-ancestor", commit, head):
            return False
        if self.path_of(branch) is not None:
            return False
        if not self.git.ok("merge-base", "--is-ancestor", head, commit):
            return False
        self.git.out("update-ref", "-m", "corral: restored", f"refs/heads/{branch}", commit, head)
        return True

    def path_of(self, branch: str) -> str | None:
        """The path of the worktree that has `branch` checked out, if one does."""
        for tree in self.trees(everywhere=True):
            if tree.branch == branch:
                return tree.path
        return None

    # -- merged or not ------------------------------------------------------------------------

    def of_record(self, base: str) -> str:
        """The ref of the base of record: the remote's base as last fetched, with a remote
        (git/remote_base.py); else `base` itself."""
        return base if self.remote is None else self.remote.tracking(base)

    def is_merged(self, branch: str, base: str) -> bool:
        """Whether the base of record already has all of the branch's changes (patch
        equivalence)."""
        base = self.of_record(base)
        cherry = self.git.out("cherry", base, branch)
        if not any(line.startswith("+") for line in cherry.splitlines()):
            return True
        merged = self.git.run("merge-tree", "--write-tree", base, branch)
        if merged.code != 0:
            return False
        return merged.out.split()[0] == self.git.out("rev-parse", f"{base}^{{tree}}")

    def delete_branch(self, branch: str, base: str) -> str | None:
        """Delete `branch`; first a backup ref when it holds work `base` lacks (returned)."""
        head = self.git.commit_of(f"refs/heads/{branch}")
        if head is None:
            return None
        backup = None
        if not self.is_merged(branch, base):
            backup = f"{BACKUP_PREFIX}{branch}/{head[:12]}"
            self.git.out("update-ref", backup, head)
            self._keep(backup)
        with self.locked():  # git reads every worktree's entry to refuse a checked-out branch
            self.git.out("branch", "--quiet", "-D", branch)
        return backup

    # -- listing ------------------------------------------------------------------------------

    def trees(self, *, everywhere: bool = False) -> list[Worktree]:
        """The worktrees under the base directory (every worktree with `everywhere`)."""
        found: list[Worktree] = []
        with self.locked():
            listed = self.git.out("worktree", "list", "--porcelain")
        for block in listed.split("\n\n"):
            fields = dict(_field(line) for line in block.splitlines() if line)
            path = fields.get("worktree")
            if not path or "bare" in fields:
                continue
            branch = fields.get("branch", "").removeprefix("refs/heads/") or None
            tree = Worktree(path=path, branch=branch, head=fields.get("HEAD") or None)
            if everywhere or self.manages(path):
                found.append(tree)
        return found

    def manages(self, path: str) -> bool:
        """Whether `path` lies under the base directory."""
        base = os.path.realpath(self.base_dir)
        return os.path.realpath(path).startswith(base + os.sep)

    def backups(self, under: str = "") -> list[tuple[str, str]]:
        """(ref, commit) of every backup ref (of branch B: `under="B/"`), by name."""
        out = self.git.out(
            "for-each-ref", "--format=%(refname) %(objectname)", (BACKUP_PREFIX + under).rstrip("/")
        )
        return [(ref, commit) for ref, _, commit in (ln.partition(" ") for ln in out.splitlines())]

    def prune_git(self) -> None:
        """`git worktree prune`: forget worktrees whose folders are gone; then their run
        object folders swept."""
        with self.locked():
            self.git.out("worktree", "prune")
            self.sweep_objects()
