"""`corral doctor`: what this machine lacks for corral, checked, each with what will not work.

Every check reads only: versions, importable packages (found, not imported), programs on
PATH, the store's file, folder and free disk, a connection to the store. Each answers
`ok`, `warn` (something optional will not work) or `fail` (corral itself will not), with
one line saying what. The store is opened without migrating it, so a doctor run never
changes the schema of the store it looks at.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sqlite3
import stat
import sys
from collections.abc import Callable
from dataclasses import dataclass

from corral import fastpaths, filemodes
from corral.errors import CorralError
from corral.git.repo import require_git
from corral.model.tools import shown, version_in
from corral.runtime.worker.tools import version_answer
from corral.store.urls import safe_url

MIN_PYTHON = (3, 11)
MIN_SQLITE = (3, 35)  # RETURNING, which every state change of the SQLite store uses
LOW_DISK_BYTES = 1 << 30
NO_DISK_BYTES = 100 << 20
AGENTS = ("claude", "codex", "aider")
OK, WARN, FAIL = "ok", "warn", "fail"


@dataclass(frozen=True, slots=True, kw_only=True)
class Check:
    """One thing looked at: its name, the verdict and why."""

    name: str
    status: str  # ok | warn | fail
    detail: str

    def to_dict(self) -> dict[str, str]:
        """The stable JSON shape (docs/cli.md)."""
        return {"name": self.name, "status": self.status, "detail": self.detail}


def check_machine(
    db: str | None,
    *,
    store_mode: str,
    open_store: Callable[[str], object],
    settings_problem: str | None = None,
) -> list[Check]:
    """Every check, in the order a person would fix them. `db` is the store's location
    (None when none was found); `open_store` opens it without migrating and asks it its
    schema version, raising CorralError when it cannot; `settings_problem` is why the
    settings (config.toml, CORRAL_*) are refused, if they are."""
    checks = [_python(), _sqlite(), _git(), _platform()]
    if settings_problem is not None:
        checks.append(Check(name="settings", status=FAIL, detail=settings_problem))
    else:
        checks.append(Check(name="settings", status=OK, detail="config.toml and CORRAL_* valid"))
    checks += [_package("postgresql", "psycopg", "postgresql:// stores", "postgresql")]
    checks += [_package("server", "uvicorn", "`corral serve`", "server")]
    checks += _store(db, store_mode, open_store)
    checks += [_agent(name) for name in AGENTS]
    return checks


def _python() -> Check:
    version = sys.version_info[:3]
    if version[:2] < MIN_PYTHON:
        return Check(name="python", status=FAIL, detail=f"{shown(version)}: corral needs 3.11")
    return Check(name="python", status=OK, detail=f"{shown(version)} at {sys.executable}")


def _sqlite() -> Check:
    version = sqlite3.sqlite_version_info
    if version[:2] < MIN_SQLITE:
        detail = f"{sqlite3.sqlite_version}: the SQLite store needs 3.35 (RETURNING)"
        return Check(name="sqlite", status=FAIL, detail=detail)
    return Check(name="sqlite", status=OK, detail=sqlite3.sqlite_version)


def _git() -> Check:
    try:
        version = require_git()
    except CorralError as exc:
        detail = f"{exc.message}: worktrees, reviews and landing will not work"
        return Check(name="git", status=WARN, detail=detail)
    return Check(name="git", status=OK, detail=shown(version))


def _platform() -> Check:
    """Linux's fast paths for watching and ending a task's processes, or the fallbacks."""
    fast = hasattr(os, "pidfd_open") and fastpaths.fd_listing() and fastpaths.subreaper_allowed()
    if fast:
        detail = f"{sys.platform}: pidfd and /proc in use"
        return Check(name="platform", status=OK, detail=detail)
    detail = f"{sys.platform}: portable fallbacks (psutil, polling) in use"
    return Check(name="platform", status=WARN, detail=detail)


def _package(name: str, module: str, feature: str, extra: str) -> Check:
    """Whether `module` is installed, found without importing it (doctor stays fast)."""
    if importlib.util.find_spec(module) is None:
        install = f"pip install 'corral[{extra}]'"
        detail = f"{module} is not installed: {feature} will not work ({install})"
        return Check(name=name, status=WARN, detail=detail)
    return Check(name=name, status=OK, detail=f"{module} installed")


def _store(db: str | None, store_mode: str, open_store: Callable[[str], object]) -> list[Check]:
    if db is None:
        detail = "no corral store here or above: run `corral init`, or set CORRAL_DB"
        return [Check(name="store", status=WARN, detail=detail)]
    checks = []
    if "://" not in db or db.startswith("sqlite:///"):
        checks += _store_file(db.removeprefix("sqlite:///"), store_mode)
    if not any(c.status == FAIL for c in checks):
        try:
            open_store(db)
        except CorralError as exc:
            checks.append(Check(name="store", status=FAIL, detail=exc.message))
        else:
            checks.append(Check(name="store", status=OK, detail=f"{safe_url(db)} answers"))
    return checks


def _store_file(path: str, store_mode: str) -> list[Check]:
    """The SQLite file's folder (writable, with room) and the file's mode."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return [Check(name="store folder", status=FAIL, detail=f"{folder} does not exist")]
    checks = []
    if not os.access(folder, os.W_OK):
        detail = f"{folder} is not writable by this user: the store cannot change"
        checks.append(Check(name="store folder", status=FAIL, detail=detail))
    free = shutil.disk_usage(folder).free
    room = f"{free / (1 << 30):.1f} GiB free in {folder}"
    status = FAIL if free < NO_DISK_BYTES else WARN if free < LOW_DISK_BYTES else OK
    checks.append(Check(name="disk", status=status, detail=room))
    if os.path.exists(path):
        mode = stat.S_IMODE(os.stat(path).st_mode)
        filemodes.use(store_mode)
        allowed = filemodes.file_mode()
        if mode & ~allowed:
            detail = (
                f"{path} is mode {mode:o}, more open than {allowed:o} (`store_mode = "
                f"{store_mode}`): others may read its tasks and tokens' hashes"
            )
            checks.append(Check(name="store file", status=WARN, detail=detail))
        else:
            checks.append(Check(name="store file", status=OK, detail=f"mode {mode:o}"))
    return checks


def _agent(name: str) -> Check:
    """An agent CLI corral has a profile for: found, and its version, or absent."""
    path = shutil.which(name)
    if path is None:
        detail = f"not on PATH: `--agent {name}` will not work"
        return Check(name=name, status=WARN, detail=detail)
    try:
        status, answer = version_answer(path)
    except OSError as exc:
        return Check(name=name, status=WARN, detail=f"at {path}, cannot run: {exc.strerror}")
    version = version_in(answer) if status == 0 else None
    found = f"{shown(version)} at {path}" if version else f"at {path} (no version read)"
    return Check(name=name, status=OK, detail=found)
