"""The base of record on a remote (`[worktree] remote = NAME`): every host starts its tasks
from the remote's base and lands on it, so a task run on one host is landed, shown,
approved and merged the same from any other.

    fetch(branch)        ─► `git fetch NAME +refs/heads/B:refs/remotes/NAME/B`: the remote's
                            tip in the remote-tracking ref (None, and that ref dropped, when
                            the remote has no such branch); fetch_all(): every branch
                            at once, for a listing
    push_base(new, base) ─► `git push NAME NEW:refs/heads/BASE`, never forced: the remote
                            refuses what is not a fast-forward, and that refusal is the
                            compare-and-set between hosts (False: the base moved; fetch,
                            merge again, push again)
    publish(branch)      ─► a task branch pushed as it enters review or is kept, so that
                            another host can show, approve, merge or land it; a task branch
                            is its task's own (rebased after changes were requested), so this
                            push may replace it; the base's never does
    start(base, branch)  ─► what a runner's worktree starts from: the fetched base, and the
                            task's branch brought over from the remote when another host
                            last worked on it
    keep(ref)            ─► a backup ref corral wrote (refs/corral/backup/...) pushed under
                            the same name, before the worktree or branch it saves goes, so
                            that a task run again on another host starts from it;
                            fetch_ref(ref) brings it to a host that lacks it

The local branch of the base is never moved: the remote-tracking ref is the base as this
host knows it. Every command that writes remote-tracking refs (fetch, push) holds the
repository's remote-refs lock (git/repo_lock.py): git updates such a ref by compare-and-
set, so a push by one runner moving `NAME/main` while another runner's fetch of it is under
way fails that fetch ("cannot lock ref ... is at X but expected Y"), and the land it was
for would be refused. Without a remote (the default) nothing here runs and the local repository is
the base of record. Network commands never prompt for credentials (GIT_TERMINAL_PROMPT=0):
a host whose git cannot reach the remote fails the command rather than hanging a runner.
"""

from __future__ import annotations

from collections.abc import Callable

from corral.foundation.errors import InvalidInput, Refused
from corral.git.repo import Git, GitResult
from corral.git.repo_lock import RepoLock

_NO_PROMPT = {"GIT_TERMINAL_PROMPT": "0"}
# What `git push --porcelain` says when the remote refused because its branch moved: since
# it was fetched ("fetch first", "non-fast-forward"), or while another host's push held or
# moved the ref in the same instant ("failed to update ref", "cannot lock ref"). A refusal
# that persists for another reason still ends, after merging.PUSH_ATTEMPTS tries.
_MOVED = ("fetch first", "non-fast-forward", "failed to update ref", "cannot lock ref")


class RemoteBase:
    """One repository's remote of record, named `name`."""

    def __init__(self, git: Git, name: str, refs_lock: Callable[[], RepoLock]) -> None:
        self.git, self.name = git, name
        self._refs_lock = refs_lock  # held by each command that writes remote-tracking refs
        self._push_tracks: bool | None = None

    def _track(self, branch: str, commit: str) -> None:
        """After a push, the remote-tracking ref at `commit`: git moves it itself when the
        remote's fetch refspec maps branches there (as `git clone` and `git remote add`
        configure it), and corral only otherwise (one git process less in a land)."""
        if self._push_tracks is None:
            specs = self.git.run("config", "--get-all", f"remote.{self.name}.fetch").out.split()
            mapped = f"refs/heads/*:refs/remotes/{self.name}/*"
            self._push_tracks = mapped in specs or f"+{mapped}" in specs
        if not self._push_tracks:
            self.git.out("update-ref", self.tracking(branch), commit)

    def check(self) -> None:
        """Refuse a name that is not a remote of the repository (`git remote`)."""
        if not self.git.ok("remote", "get-url", self.name):
            raise InvalidInput("worktree.remote", "a remote of the repository", self.name)

    def tracking(self, branch: str) -> str:
        """The remote-tracking ref of `branch`: `refs/remotes/NAME/BRANCH`."""
        return f"refs/remotes/{self.name}/{branch}"

    def shown(self, branch: str) -> str:
        """How a person or an agent names the remote's `branch` in a worktree: `NAME/BRANCH`."""
        return f"{self.name}/{branch}"

    def fetch(self, branch: str) -> str | None:
        """The remote's tip of `branch`, fetched; None when the remote has no such branch."""
        spec = f"+refs/heads/{branch}:{self.tracking(branch)}"
        with self._refs_lock().held():
            got = self.git.run("fetch", "--quiet", "--no-tags", self.name, spec, env=_NO_PROMPT)
        if got.code == 0:
            return self.git.commit_of(self.tracking(branch))
        if "couldn't find remote ref" in got.err:
            self.git.run("update-ref", "-d", self.tracking(branch))
            return None
        raise Refused(f"cannot fetch {branch} from remote {self.name}: {_last_line(got)}")

    def fetch_all(self) -> None:
        """Every branch of the remote into its remote-tracking ref, and the tracking refs of
        branches the remote no longer has dropped (`--prune`), in one round trip."""
        spec = f"+refs/heads/*:refs/remotes/{self.name}/*"
        with self._refs_lock().held():
            got = self.git.run(
                "fetch", "--quiet", "--prune", "--no-tags", self.name, spec, env=_NO_PROMPT
            )
        if got.code != 0:
            raise Refused(f"cannot fetch from remote {self.name}: {_last_line(got)}")

    def push_base(self, new: str, base: str) -> bool:
        """Move the remote's `base` to `new`, a descendant of its tip; False when the remote
        refused because its base moved since it was fetched. Never forced."""
        pushed = self._push(f"{new}:refs/heads/{base}")
        if pushed.code == 0:
            self._track(base, new)
            return True
        refused = [line for line in pushed.out.splitlines() if line.startswith("!")]
        if refused and any(word in refused[0] for word in _MOVED):
            return False
        detail = refused[0].split("\t")[-1] if refused else _last_line(pushed)
        raise Refused(f"remote {self.name} refused {base} at {new[:12]}: {detail}")

    def publish(self, branch: str) -> str:
        """Push task branch `branch` to the remote (replacing the remote's copy); its commit."""
        head = self.git.out("rev-parse", f"refs/heads/{branch}")
        pushed = self._push(f"+{head}:refs/heads/{branch}")
        if pushed.code != 0:
            raise Refused(f"cannot push {branch} to remote {self.name}: {_last_line(pushed)}")
        self._track(branch, head)
        return head

    def unpublish(self, branch: str) -> None:
        """Delete the remote's copy of task branch `branch`, if it has one."""
        if self.git.commit_of(self.tracking(branch)) is None:
            return
        gone = self._push(f":refs/heads/{branch}")
        if gone.code != 0 and "remote ref does not exist" not in gone.err:
            raise Refused(f"cannot delete {branch} on remote {self.name}: {_last_line(gone)}")
        self.git.run("update-ref", "-d", self.tracking(branch))

    def keep(self, ref: str) -> None:
        """Push backup ref `ref` to the remote under the same name (a backup's name holds
        its commit: replacing one changes nothing). Refused when the remote will not take
        it: the caller then keeps what the ref saves."""
        pushed = self._push(f"+{ref}:{ref}")
        if pushed.code != 0:
            raise Refused(f"cannot push backup {ref} to remote {self.name}: {_last_line(pushed)}")

    def fetch_ref(self, ref: str) -> str | None:
        """Backup ref `ref` fetched from the remote into the same name here; its commit, or
        None when the remote has no such ref (or cannot be reached: the run then starts
        without it, as on a host that never had it)."""
        got = self.git.run(
            "fetch", "--quiet", "--no-tags", self.name, f"+{ref}:{ref}", env=_NO_PROMPT
        )
        return self.git.commit_of(ref) if got.code == 0 else None

    def start(self, base: str, branch: str | None) -> str:
        """Fetch `base` (and the task's `branch`); the ref a new worktree starts from.

        A branch the remote has and this host lacks (another host ran the task before) is
        made here at the remote's commit; one this host has is moved forward to the remote's
        when the remote's descends from it. A branch that diverged keeps this host's commits.
        """
        if self.fetch(base) is None:
            raise InvalidInput("base", f"a branch of remote {self.name}", base)
        theirs = self.fetch(branch) if branch else None
        if branch and theirs is not None:
            ours = self.git.commit_of(f"refs/heads/{branch}")
            if ours is None:
                self.git.out("branch", "--no-track", branch, theirs)
            elif ours != theirs and self.git.ok("merge-base", "--is-ancestor", ours, theirs):
                self._fast_forward(branch, ours, theirs)
        return self.tracking(base)

    def _fast_forward(self, branch: str, ours: str, theirs: str) -> None:
        """Move local `branch` to `theirs`: in the worktree that has it checked out (its
        files follow; git refuses over uncommitted changes), else by compare-and-set."""
        ref = f"refs/heads/{branch}"
        path = self.git.out("for-each-ref", "--format=%(worktreepath)", ref)
        if path:
            self.git.at(path).out("merge", "--ff-only", "--quiet", theirs)
        else:
            self.git.out("update-ref", ref, theirs, ours)

    def _push(self, spec: str) -> GitResult:
        with self._refs_lock().held():
            return self.git.run("push", "--porcelain", "--quiet", self.name, spec, env=_NO_PROMPT)


def _last_line(result: GitResult) -> str:
    lines = (result.err or result.out).strip().splitlines()
    return lines[-1] if lines else f"exit status {result.code}"
