"""The refs of one folder of a repository as files (git's `files` backend), for the sandbox
to bind each read-only over itself (runtime/worker/sandbox.py says why).

A ref is a file `refs/heads/...` holding its commit, or, once `git gc` or `git pack-refs`
has run, a line of `packed-refs` and no file at all. A packed ref has nothing to bind: an
agent allowed to write the folder could make a file of that name and shadow it. So
`loose_refs` first gives each packed ref under the folder a file of the same value, as
git itself does when it next updates one, and under git's own protocol: the ref's
`.lock` file taken with O_EXCL (a git process holding it is changing the ref: it is left
alone), `packed-refs` read again under it (a ref deleted meanwhile is not brought back),
the file renamed into place. What the ref names does not change; how it is stored does.
"""

from __future__ import annotations

import os
from contextlib import suppress

MAX_PACKED_BYTES = 64 * 1024 * 1024  # a packed-refs file larger than this is not read


def loose_refs(common: str, folder: str) -> list[str]:
    """The ref files under `folder` (inside the git common dir `common`), each packed ref
    there first given a file of its own."""
    for name, commit in _packed_under(common, folder).items():
        _unpack(common, name, commit)
    found = []
    for parent, _, names in os.walk(folder):
        found += [os.path.join(parent, n) for n in names if not n.endswith(".lock")]
    return found


def _packed_under(common: str, folder: str) -> dict[str, str]:
    """The packed refs whose names lie under `folder`: name -> commit."""
    prefix = os.path.relpath(folder, common).replace(os.sep, "/").rstrip("/") + "/"
    return {n: c for n, c in _packed(common).items() if n.startswith(prefix)}


def _packed(common: str) -> dict[str, str]:
    """`packed-refs` as name -> object id; empty when there is none (or it is unreadable,
    or too large to be a repository's)."""
    try:
        with open(os.path.join(common, "packed-refs"), "rb") as handle:
            text = handle.read(MAX_PACKED_BYTES + 1)
    except OSError:
        return {}
    if len(text) > MAX_PACKED_BYTES:
        return {}
    found = {}
    for line in text.decode("utf-8", "replace").splitlines():
        if line.startswith(("#", "^")):  # the header, a peeled tag's commit
            continue
        oid, _, name = line.partition(" ")
        if name and _is_hex(oid) and ".." not in name.split("/"):
            found[name] = oid
    return found


def _unpack(common: str, name: str, commit: str) -> None:
    """Write packed ref `name` as a file holding `commit`, as git writes a ref: under its
    lock, only if it is still packed with that value and has no file yet."""
    path = os.path.join(common, *name.split("/"))
    lock = path + ".lock"
    try:
        fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    except OSError:  # a git process is changing it (or the folder is gone): leave it be
        return
    try:
        try:
            if os.path.lexists(path) or _packed(common).get(name) != commit:
                return
            os.write(fd, f"{commit}\n".encode())
        finally:
            os.close(fd)
        os.rename(lock, path)
    finally:
        with suppress(FileNotFoundError):
            os.unlink(lock)


def _is_hex(text: str) -> bool:
    return len(text) in (40, 64) and all(c in "0123456789abcdef" for c in text)
