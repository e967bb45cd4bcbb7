"""Copy a run's artifacts out of its working directory (corral.model.artifacts).

What a glob matches is kept only if it is a regular file whose real path, symbolic links
resolved, lies inside the working directory: a link to `/etc/passwd` or out of a worktree
is not followed. The file is opened by that real path with O_NOFOLLOW, its size read from
the open descriptor, and copied while hashed, so a file swapped for a link meanwhile is
refused rather than read. Files go in the order of the globs, then by name, each counted
against the run's cap; a file past the cap is recorded as skipped, with no copy.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import os
import posixpath
import re
import stat
from collections.abc import Iterator
from typing import TYPE_CHECKING, BinaryIO

from corral.foundation import filemodes
from corral.foundation.errors import CorralError
from corral.foundation.logs import event
from corral.model.artifacts import MB, Artifact, artifacts_dir
from corral.store.location import is_inside

if TYPE_CHECKING:
    from corral.runtime.worker.command_job import CommandJob
    from corral.runtime.worker.config import Workplace
    from corral.runtime.worker.executor import CommandSpec

CHUNK = 1024 * 1024


def keep_artifacts(place: Workplace, job: CommandJob, run_id: str, spec: CommandSpec) -> None:
    """After a run ended, however: its artifacts copied beside its output
    (`<run>.artifacts/`) and recorded on it. A failure here is logged, never the run's."""
    dest = artifacts_dir(spec.transcript_path)
    assert dest is not None  # a command's run has output files
    try:
        kept = collect(job.artifacts, cwd=spec.cwd, dest=dest, max_bytes=job.artifacts_max_bytes)
        place.store.artifacts.record_artifacts(run_id, kept)
    except (OSError, CorralError) as exc:
        event(place.log, "run.artifacts_failed", logging.WARNING, run_id=run_id, error=str(exc))
        return
    skipped = [a.path for a in kept if a.skipped is not None]
    event(place.log, "run.artifacts", run_id=run_id, kept=len(kept) - len(skipped),
          skipped=len(skipped))  # fmt: skip


def collect(patterns: tuple[str, ...], *, cwd: str, dest: str, max_bytes: int) -> list[Artifact]:
    """Copy the files `patterns` match under `cwd` into `dest`, up to `max_bytes` in all."""
    found: list[Artifact] = []
    left = max_bytes
    for rel in _matches(patterns, cwd):
        artifact = _copy(rel, cwd=cwd, dest=dest, left=left, max_bytes=max_bytes)
        if artifact is not None:
            found.append(artifact)
            left -= artifact.size_bytes if artifact.skipped is None else 0
    return found


def _matches(patterns: tuple[str, ...], cwd: str) -> list[str]:
    """Relative paths of the files the patterns match, each once, in the order of the
    patterns and then by name."""
    seen: dict[str, None] = {}
    for pattern in map(posixpath.normpath, patterns):
        wanted = _regex(pattern)
        for rel in sorted(_candidates(pattern, cwd)):
            if wanted.match(rel):
                seen.setdefault(rel, None)
    return list(seen)


def _candidates(pattern: str, cwd: str) -> Iterator[str]:
    """The files (and links to files) that could match `pattern`: below its fixed leading
    folders, no deeper than it reaches. Linked folders are never entered (os.walk's
    default), so `**` cannot wander out of the working directory or round a link loop, as
    `glob.glob(recursive=True)` does."""
    parts = pattern.split("/")
    fixed = list(itertools.takewhile(lambda part: not _MAGIC.search(part), parts[:-1]))
    depth = None if "**" in parts else len(parts) - len(fixed)
    hidden = any(part.startswith(".") for part in parts)  # else `.git` is not walked
    root = os.path.join(cwd, *fixed)
    for here, folders, files in os.walk(root):
        level = 0 if here == root else os.path.relpath(here, root).count(os.sep) + 1
        if depth is not None and level + 1 >= depth:
            folders.clear()
        elif not hidden:
            folders[:] = [name for name in folders if not name.startswith(".")]
        for name in files:
            yield os.path.relpath(os.path.join(here, name), cwd).replace(os.sep, "/")


_MAGIC = re.compile(r"[*?\[]")


def _regex(pattern: str) -> re.Pattern[str]:
    """`pattern` as glob reads it: `*`, `?` and `[...]` within one name, `**` any number
    of folders; a name starting with `.` is matched only by a part that starts with one."""
    parts = pattern.split("/")
    out = []
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        if part == "**":
            out.append(r"(?:(?!\.)[^/]*/)*(?!\.)[^/]*" if last else r"(?:(?!\.)[^/]*/)*")
        else:
            out.append(_part(part) + ("" if last else "/"))
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _part(part: str) -> str:
    """One name of a glob as a regular expression that stays within the name."""
    out = [] if part.startswith(".") else [r"(?!\.)"]
    i = 0
    while i < len(part):
        c = part[i]
        close = part.find("]", i + 2) if c == "[" else -1
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif close != -1:
            inner = part[i + 1 : close]
            inner = "^" + inner[1:] if inner.startswith("!") else inner
            out.append("[" + inner.replace("\\", "\\\\") + "]")
            i = close
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _copy(rel: str, *, cwd: str, dest: str, left: int, max_bytes: int) -> Artifact | None:
    """One match copied, or skipped with the reason; None when it is not a file of `cwd`."""
    source = os.path.join(cwd, rel)
    if not is_inside(source, cwd):
        return None  # a symbolic link out of the working directory: not followed
    try:
        fd = os.open(os.path.realpath(source), os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None  # gone, unreadable, or swapped for a link since it was matched
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        name = _text(rel)
        if name is None:
            shown = os.fsencode(rel).decode("utf-8", "replace")
            return Artifact(path=shown, size_bytes=info.st_size, skipped="name is not UTF-8")
        if info.st_size > left:
            cap = f"{max_bytes / MB:g} MB"
            return Artifact(path=name, size_bytes=info.st_size, skipped=f"past the {cap} cap")
        digest, copied = _write(handle, os.path.join(dest, rel), info.st_size)
    return Artifact(path=name, size_bytes=copied, sha256=digest)


def _text(rel: str) -> str | None:
    """`rel` as text a store can hold, or None: a name of bytes that are not UTF-8."""
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return rel


def _write(handle: BinaryIO, target: str, size: int) -> tuple[str, int]:
    """Copy up to `size` bytes of `handle` (what it held when opened: a file still being
    written is cut there) to `target`, made private; their SHA-256 and how many."""
    filemodes.make_dirs(os.path.dirname(target))
    digest = hashlib.sha256()
    out = filemodes.open_file(target, os.O_WRONLY | os.O_TRUNC | os.O_NOFOLLOW)
    with os.fdopen(out, "wb") as sink:
        left = size
        while left > 0:
            chunk = handle.read(min(CHUNK, left))
            if not chunk:
                break
            digest.update(chunk)
            sink.write(chunk)
            left -= len(chunk)
    return digest.hexdigest(), size - left
