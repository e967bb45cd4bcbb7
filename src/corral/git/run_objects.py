"""A sandboxed run's own object folder: the agent commits without write access to the
repository's objects.

Inside a sandbox (runtime/worker/sandbox.py) a linked worktree's agent sees
`<common>/objects` read-only, so it can neither delete nor rewrite an object of the
repository's history. Its git writes new objects into a folder of its own, outside the
worktree's gitdir (which `git worktree remove` deletes), and reads the rest through the
repository:

    <common>/corral-objects/<worktree gitdir name>/     writable inside the sandbox
        info/  pack/                                    read-only inside the sandbox
    GIT_OBJECT_DIRECTORY=<that folder>  GIT_ALTERNATE_OBJECT_DIRECTORIES=<common>/objects

    lend(linked)    before the sandbox starts: the folder made and listed in
                    `<common>/objects/info/alternates`, so every git of corral's reads the
                    agent's objects at once, even if the runner dies before `settle`
    settle(linked)  after the run, before corral's git touches the worktree: each loose
                    object checked against its name and copied in, never over an existing
                    file; each pack indexed again by `git index-pack` (which checks every
                    object and names the pack itself); then the line removed and the
                    folder deleted
    sweep(common)   settle every folder whose worktree is gone, and drop lines whose folder
                    is (git warns on every command about an alternate that does not exist)

Every step holds the repository's objects lock (git/repo_lock.py) and can be run again: a
crash anywhere is finished by the next run of the worktree, or by the sweep of the
clean-up that removes it. Why `info` and `pack` stay read-only: git looks an object up in
every pack (the alternates' too) before any loose object, and follows an alternate's own
`info/alternates`; a pack or a further alternate planted by the agent could show other
content under an existing object's name to the runners' git while the line is listed.
Loose objects are looked up in the repository's own folder first, so the agent's can
only add names. Its git still fetches (GIT_CONFIG_* below: the objects unpacked loose).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from corral.git.repo import Git
from corral.git.repo_lock import OBJECTS_LOCK, repo_lock

FOLDER = "corral-objects"
# A line of `objects/info/alternates` is relative to the objects folder: the repository
# can move. corral's lines, and only those, are corral's to remove.
LINE_PREFIX = f"../{FOLDER}/"
CHUNK = 1 << 16
_FANOUT = re.compile(r"[0-9a-f]{2}")
_REST = re.compile(r"[0-9a-f]{38}|[0-9a-f]{62}")  # sha1 or sha256 names
_PACK = re.compile(r"pack-[0-9a-f]{40,64}\.pack")
# A fetch inside the sandbox unpacks what it receives into loose objects: it cannot write
# a pack (`pack/` is read-only there).
UNPACK_ALL = (("fetch.unpackLimit", "2147483647"), ("transfer.unpackLimit", "2147483647"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Linked:
    """A linked worktree's git directories, links resolved."""

    gitdir: str  # <common>/worktrees/NAME
    common: str

    @property
    def name(self) -> str:
        """The worktree's gitdir name: its object folder's name."""
        return os.path.basename(self.gitdir)

    @property
    def folder(self) -> str:
        """The run's object folder."""
        return folder_of(self.common, self.name)


@dataclass(frozen=True, slots=True, kw_only=True)
class Settled:
    """What one settle brought into the repository, and what it refused."""

    loose: int = 0
    packs: int = 0
    refused: tuple[str, ...] = ()  # paths whose content did not match their name


def linked(root: str) -> Linked | None:
    """The git directories of the linked worktree at `root`; None for a main checkout (its
    `.git` a folder), or no repository at all."""
    try:
        with open(os.path.join(root, ".git"), encoding="utf-8") as handle:
            line = handle.read(4096).strip()
    except OSError:
        return None
    if not line.startswith("gitdir: "):
        return None
    gitdir = os.path.realpath(os.path.join(root, line.removeprefix("gitdir: ")))
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as handle:
            common = os.path.realpath(os.path.join(gitdir, handle.read(4096).strip()))
    except OSError:
        common = gitdir
    return Linked(gitdir=gitdir, common=common)


def folder_of(common: str, name: str) -> str:
    """The object folder of the worktree whose gitdir is named `name`."""
    return os.path.join(common, FOLDER, name)


def inside_env(linked: Linked, env: dict[str, str]) -> dict[str, str]:
    """The variables that send the agent's git to its folder (`env` as it is inside, whose
    own GIT_CONFIG_COUNT entries are kept)."""
    given = env.get("GIT_CONFIG_COUNT", "")
    count = int(given) if given.isdigit() else 0
    extra = {
        "GIT_OBJECT_DIRECTORY": linked.folder,
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.path.join(linked.common, "objects"),
        "GIT_CONFIG_COUNT": str(count + len(UNPACK_ALL)),
    }
    for n, (key, value) in enumerate(UNPACK_ALL, start=count):
        extra[f"GIT_CONFIG_KEY_{n}"], extra[f"GIT_CONFIG_VALUE_{n}"] = key, value
    return extra


@contextlib.contextmanager
def _locked(common: str) -> Iterator[None]:
    """The objects lock, by one spelling of its path: a process's threads share one lock."""
    with repo_lock(os.path.realpath(common), OBJECTS_LOCK).held():
        yield


def lend(linked: Linked) -> str:
    """Make the worktree's object folder (with `info` and `pack`) and list it in the
    repository's alternates; the folder."""
    with _locked(linked.common):
        mode = _mode_of(os.path.join(linked.common, "objects"))
        for sub in ("info", "pack"):
            os.makedirs(os.path.join(linked.folder, sub), mode=mode, exist_ok=True)
        _rewrite_alternates(linked.common, add=LINE_PREFIX + linked.name)
    return linked.folder


def settle(linked: Linked) -> Settled:
    """Bring the worktree's object folder into the repository and remove it (nothing to do
    without one)."""
    with _locked(linked.common):
        return _settle(linked.common, linked.name)


def sweep(common: str) -> tuple[str, ...]:
    """Settle the folders of worktrees that are gone, and drop lines whose folder is gone;
    the names settled."""
    with _locked(common):
        names = _orphans(common)
        for name in names:
            _settle(common, name)
        _rewrite_alternates(common)
        return names


def _orphans(common: str) -> tuple[str, ...]:
    """The object folders whose worktree's gitdir is gone."""
    try:
        entries = list(os.scandir(os.path.join(common, FOLDER)))
    except OSError:
        return ()
    return tuple(
        sorted(
            e.name
            for e in entries
            if e.is_dir(follow_symlinks=False)
            and not os.path.isdir(os.path.join(common, "worktrees", e.name))
        )
    )


def _settle(common: str, name: str) -> Settled:
    folder = folder_of(common, name)
    settled = Settled()
    if os.path.isdir(folder) and not os.path.islink(folder):
        objects = os.path.join(common, "objects")
        loose, refused = _move_loose(folder, objects)
        packs, bad_packs = _move_packs(common, folder)
        settled = Settled(loose=loose, packs=packs, refused=refused + bad_packs)
    _rewrite_alternates(common, drop=LINE_PREFIX + name)
    shutil.rmtree(folder, ignore_errors=True)
    return settled


# -- loose objects -----------------------------------------------------------------------


def _move_loose(folder: str, objects: str) -> tuple[int, tuple[str, ...]]:
    """Copy every loose object of `folder` that `objects` lacks; (copied, refused)."""
    moved, refused = 0, []
    for fan in _entries(folder, _FANOUT, directory=True):
        for rest in _entries(os.path.join(folder, fan), _REST, directory=False):
            source = os.path.join(folder, fan, rest)
            target = os.path.join(objects, fan, rest)
            if os.path.lexists(target):
                continue  # never replaced: the repository's own copy stays
            if _copy_object(source, target, fan + rest):
                moved += 1
            else:
                refused.append(source)
    return moved, tuple(refused)


def _entries(folder: str, pattern: re.Pattern[str], *, directory: bool) -> list[str]:
    """The names in `folder` matching `pattern` that are folders (or regular files), never
    links: a link planted by the agent could name anything of the host."""
    try:
        found = list(os.scandir(folder))
    except OSError:
        return []
    kind = (lambda e: e.is_dir(follow_symlinks=False)) if directory else _is_file
    return sorted(e.name for e in found if pattern.fullmatch(e.name) and kind(e))


def _is_file(entry: os.DirEntry[str]) -> bool:
    return entry.is_file(follow_symlinks=False)


def _copy_object(source: str, target: str, oid: str) -> bool:
    """Copy loose object `source` to `target` if its content is the object `oid` names;
    through a temporary file beside the target, linked in only while the name is free.
    Whether it is there now."""
    folder = os.path.dirname(target)
    os.makedirs(folder, mode=_mode_of(os.path.dirname(folder)), exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix="tmp_obj_", dir=folder)
    try:
        with os.fdopen(fd, "wb") as out:
            if not _copy_checked(source, out, oid):
                return False
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o444)
        with contextlib.suppress(FileExistsError):  # there meanwhile: the first one stays
            os.link(temporary, target)
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)


def _copy_checked(source: str, out: BinaryIO, oid: str) -> bool:
    """Copy `source` (a regular file, links not followed) to `out` while hashing what it
    inflates to; whether that is the object `oid` names."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        digest = hashlib.sha1 if len(oid) == 40 else hashlib.sha256
        hasher, inflate = digest(), zlib.decompressobj()
        try:
            while chunk := handle.read(CHUNK):
                out.write(chunk)
                _inflate_into(hasher, inflate, chunk)
            hasher.update(inflate.flush())
        except zlib.error:
            return False
    return inflate.eof and not inflate.unused_data and hasher.hexdigest() == oid


def _inflate_into(hasher: hashlib._Hash, inflate: zlib._Decompress, chunk: bytes) -> None:
    """Hash what `chunk` inflates to, CHUNK bytes at a time (a small file may inflate to
    gigabytes: never all of it in memory)."""
    hasher.update(inflate.decompress(chunk, CHUNK))
    while inflate.unconsumed_tail:
        hasher.update(inflate.decompress(inflate.unconsumed_tail, CHUNK))


# -- packs -------------------------------------------------------------------------------


def _move_packs(common: str, folder: str) -> tuple[int, tuple[str, ...]]:
    """Index every pack of `folder` into the repository; (packs taken, packs refused). Only
    the .pack is read: `git index-pack` computes its index (and names it) from its
    objects, and refuses one whose object differs from the repository's of that name."""
    pack_dir = os.path.join(folder, "pack")
    taken, refused = 0, []
    git = Git(common)
    for name in _entries(pack_dir, _PACK, directory=False):
        path = os.path.join(pack_dir, name)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            refused.append(path)
            continue
        with os.fdopen(fd, "rb") as handle:
            ok = stat.S_ISREG(os.fstat(fd).st_mode)
            ok = ok and git.run("index-pack", "--stdin", stdin=handle.fileno()).code == 0
        if ok:
            taken += 1
        else:
            refused.append(path)
    return taken, tuple(refused)


# -- the alternates file -----------------------------------------------------------------


def _rewrite_alternates(common: str, *, add: str | None = None, drop: str | None = None) -> None:
    """`objects/info/alternates` with `add` listed once, `drop` gone, and every line of
    corral's whose folder is gone removed; others' lines kept as they are, in order.
    Written to a temporary file renamed over it (removed when nothing is left)."""
    info = os.path.join(common, "objects", "info")
    path = os.path.join(info, "alternates")
    try:
        with open(path, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except FileNotFoundError:
        lines = []
    objects = os.path.join(common, "objects")
    kept = [
        line
        for line in lines
        if line != drop
        and (not line.startswith(LINE_PREFIX) or os.path.isdir(os.path.join(objects, line)))
    ]
    if add is not None and add not in kept:
        kept.append(add)
    if kept == lines:
        return
    if not kept:
        os.unlink(path)
        return
    os.makedirs(info, exist_ok=True)
    fd, temporary = tempfile.mkstemp(prefix="alternates.", dir=info)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write("".join(f"{line}\n" for line in kept))
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def _mode_of(objects: str) -> int:
    """The mode of the repository's objects folder (as core.sharedRepository made it), for
    the folders made in it and beside it."""
    return stat.S_IMODE(os.stat(objects).st_mode)
