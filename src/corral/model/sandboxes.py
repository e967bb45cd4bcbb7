"""Sandboxes: what a run's process tree may see, as data, and the command line that makes it.

A sandboxed run sees the host read-only, with a few folders hidden (an empty tmpfs over
them) and a few paths bound back, read-only or writable. Which paths is decided by
runtime/worker/sandbox.py from the world (the worktree, HOME, the store's folder); here
the mounts are put in order and turned into a `bwrap` or `podman run` command line, with
no I/O, so the rules are table-tested.

Order is what makes the rules hold: a mount covers everything below its path, so every
mount comes after the mounts of its ancestors (fewest path components first). A worktree
under the hidden `.corral/` is then bound back after `.corral/` is hidden, and `.corral/`
inside a writable folder is hidden after that folder is bound. At one path, hiding comes
first, then read-only, then writable: the most open wins, as the caller asked for it last.

    bwrap  --die-with-parent --unshare-all [--share-net] --ro-bind / /
           --dev /dev --proc /proc  MOUNTS  EMPTIED  KEPT  --chdir CWD -- ARGV
    podman run --rm -i --read-only --network none|host
           MOUNTS EMPTIED KEPT --env NAME... --workdir CWD --rootfs / ARGV

`--unshare-all` puts the tree in a pid namespace of its own whose first process is
bwrap's: when it ends (killed with the run's process group, or by --die-with-parent
when the runner is killed) the kernel ends every process in the namespace, those that
left the group with `setsid` among them. No `--new-session`: the executor already starts
the engine in a session of its own, with no terminal to push input into (what
--new-session guards against), and the agent must stay in that session's process group
for the runner's SIGTERM to reach it first, with its grace, before the SIGKILL.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from corral.foundation.worker_options import NETWORKS, SANDBOXES

__all__ = ["NETWORKS", "SANDBOXES", "Access", "Mount", "SandboxPlan", "ordered", "wrapper"]

CONTAINER_ENGINES = ("podman",)  # docker has no --rootfs: it cannot show the host read-only


class Access(enum.IntEnum):
    """What a mount leaves visible at its path; at one path the larger wins."""

    HIDDEN = 0  # an empty tmpfs
    READ_ONLY = 1
    WRITABLE = 2


@dataclass(frozen=True, slots=True, kw_only=True)
class Mount:
    """One path of the host as the sandbox shows it (an absolute path, links resolved)."""

    path: str
    access: Access


@dataclass(frozen=True, slots=True, kw_only=True)
class SandboxPlan:
    """Everything a sandboxed command line needs: the engine, network, mounts and cwd."""

    kind: str  # bwrap | container
    engine: str  # the program's absolute path
    network: bool
    cwd: str
    mounts: tuple[Mount, ...]
    env_names: tuple[str, ...] = ()  # a container's variables, passed on by name
    # Files covered by /dev/null, after every mount: the store's SQLite files, wherever
    # they are, even inside a folder bound writable. In bwrap's user namespace its mounts
    # are nodev, so they cannot even be opened; elsewhere they read as empty.
    emptied: tuple[str, ...] = ()
    # Files bound read-only over themselves after every mount, where they still exist when
    # the sandbox starts: the other refs in the writable folder of the run's branch (packed
    # ones given files first, git/ref_files.py). git moves a ref by renaming its lock file
    # onto it and deletes one by unlinking it, both of which a mount point refuses.
    kept: tuple[str, ...] = ()
    name: str = ""  # a container's name (the run's id): what to remove when it is left


def ordered(mounts: tuple[Mount, ...]) -> list[Mount]:
    """`mounts` with every ancestor before its descendants, one per path (the most open)."""
    best: dict[str, Access] = {}
    for mount in mounts:
        path = _normal(mount.path)
        best[path] = max(best.get(path, Access.HIDDEN), mount.access)
    return [Mount(path=p, access=a) for p, a in sorted(best.items(), key=_depth)]


def _normal(path: str) -> str:
    return "/" + "/".join(part for part in path.split("/") if part)


def _depth(item: tuple[str, Access]) -> tuple[int, str]:
    path = item[0]
    return (0 if path == "/" else path.count("/"), path)


def wrapper(plan: SandboxPlan) -> tuple[str, ...]:
    """The words put before a command to run it in `plan`'s sandbox (its argv follows)."""
    if plan.kind == "bwrap":
        return bwrap_words(plan)
    return container_words(plan)


def bwrap_words(plan: SandboxPlan) -> tuple[str, ...]:
    """bubblewrap's command line, up to the `--` before the command."""
    words = [plan.engine, "--die-with-parent", "--unshare-all"]
    if plan.network:
        words.append("--share-net")
    words += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    flags = {Access.READ_ONLY: "--ro-bind", Access.WRITABLE: "--bind"}
    for mount in ordered(plan.mounts):
        if mount.access is Access.HIDDEN:
            words += ["--tmpfs", mount.path]
        else:
            words += [flags[mount.access], mount.path, mount.path]
    for path in plan.emptied:
        words += ["--ro-bind", "/dev/null", path]
    for path in plan.kept:  # one deleted meanwhile (its task landed) is skipped
        words += ["--ro-bind-try", path, path]
    return (*words, "--chdir", plan.cwd, "--")


def container_words(plan: SandboxPlan) -> tuple[str, ...]:
    """`podman run`'s command line over the host's own root, up to the command."""
    words = [plan.engine, "run", "--rm", "-i", "--read-only"]
    words += ["--network", "host" if plan.network else "none"]
    if plan.name:
        words += ["--name", plan.name]
    for mount in ordered(plan.mounts):
        if mount.access is Access.HIDDEN:
            words += ["--tmpfs", mount.path]
        else:
            suffix = "ro" if mount.access is Access.READ_ONLY else "rw"
            words += ["--volume", f"{mount.path}:{mount.path}:{suffix}"]
    for path in plan.emptied:
        words += ["--volume", f"/dev/null:{path}:ro"]
    for path in plan.kept:
        words += ["--volume", f"{path}:{path}:ro"]
    for name in plan.env_names:
        words += ["--env", name]  # the value is taken from podman's own environment
    # `--rootfs` makes the one positional argument a root folder in place of an image;
    # podman reads no option after it, so the command follows as it is (no `--`).
    return (*words, "--workdir", plan.cwd, "--rootfs", "/")
