"""`corral doctor`: what this machine lacks for corral, checked, each with what will not work.

Every check reads only: versions, importable packages (found, not imported), programs on
PATH, a sandbox's engine running `true` in a sandbox, the store's file, folder and free
disk, a connection to the store, the names (never the values) of the variables a task
would get from this environment (`task_env`), and whether OTEL_* ask for traces
(`traces`: an endpoint by its scheme and host only).
Each answers `ok`, `warn` (something optional will not work) or `fail` (corral itself
will not), with one line saying what. The store is opened without migrating it, so a
doctor run never changes the schema of the store it looks at.
"""

from __future__ import annotations

import importlib.util
import os
import shlex
import shutil
import sqlite3
import stat
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from corral.foundation import fastpaths, filemodes
from corral.foundation.errors import CorralError, InvalidInput
from corral.foundation.policies import WorkerOptions
from corral.foundation.printable import one_line
from corral.foundation.settings import Settings, setting_variables
from corral.foundation.variables import unknown
from corral.git.repo import require_git
from corral.model.agents import AgentProfile
from corral.model.tools import shown, version_in
from corral.runtime.worker import tracing
from corral.runtime.worker.sandbox import probe as sandbox_probe
from corral.runtime.worker.tools import version_answer
from corral.store.urls import safe_url
from corral.usecases.agents import GENERIC, load_profile
from corral.usecases.usage import PROVIDER_ENV_VARIABLE

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
    checks += stray_variables(os.environ)
    checks += [_package("postgresql", "psycopg", "postgresql:// stores", "postgresql")]
    checks += [_package("server", "uvicorn", "`corral serve`", "server")]
    checks += [traces(os.environ)]
    checks += _store(db, store_mode, open_store)
    checks += [_agent(name) for name in AGENTS]
    checks += [_sandbox(kind) for kind in ("bwrap", "container")]
    return checks


def stray_variables(environ: Mapping[str, str]) -> list[Check]:
    """A WARN for each `CORRAL_*` variable nothing of corral's reads: a misspelt setting
    (`CORRAL_LEASE=45m` for `CORRAL_LEASE_S`) is otherwise ignored without a word."""
    checks = []
    for name, near in unknown(environ, setting_variables()):
        hint = f": did you mean {near}?" if near else " (docs/cli.md lists them)"
        detail = f"{one_line(name, 80)} is not a variable of corral's, and is ignored{hint}"
        checks.append(Check(name="variables", status=WARN, detail=detail))
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


def traces(environ: Mapping[str, str]) -> Check:
    """Whether OTEL_* ask for a span per agent run, where they go, and what a worker of an
    agent would refuse (runtime/worker/tracing.py)."""
    try:
        on = tracing.check(environ)
    except CorralError as exc:
        detail = f"{exc.message} (workers of an agent will refuse to start)"
        return Check(name="traces", status=WARN, detail=detail)
    if not on:
        return Check(name="traces", status=OK, detail="off: no OTEL_* variable asks for them")
    return Check(name="traces", status=OK, detail=f"on: {tracing.destinations(environ)}")


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


def _sandbox(kind: str) -> Check:
    """A sandbox's engine (runtime/worker/sandbox.py): found and able to run `true` in one,
    or why `--sandbox KIND` will be refused."""
    path, problem = sandbox_probe(kind)
    if problem is not None:
        return Check(
            name=kind,
            status=WARN,
            detail=f"{problem}: `--sandbox {kind}` will be refused",
        )
    return Check(name=kind, status=OK, detail=f"{path} works")


def task_env(environ: Mapping[str, str], settings: Settings, agents_folder: str) -> list[Check]:
    """What a task's command would get from `environ`: the names passed (for the pool's
    agent, `[pool] agent`, or a plain command; with `[[pool.group]]`, for each group's,
    its checks named `task env (NAME)`), then each name withheld grouped by why. Never a
    value."""
    groups = settings.pool_groups
    if not groups:
        return _group_env(environ, settings, settings.pool.options, agents_folder, "")
    checks = []
    for group in settings.pool.groups:
        checks += _group_env(environ, settings, group.options, agents_folder, group.name)
    return checks


def _group_env(
    environ: Mapping[str, str],
    settings: Settings,
    options: WorkerOptions,
    agents_folder: str,
    group: str,
) -> list[Check]:
    """`task_env` for one group of the pool (`group` empty: the pool without groups)."""
    name, key = (
        ("task env", "[pool] agent")
        if not group
        else (f"task env ({group})", f"[[pool.group]] {group} agent")
    )
    try:
        agent = _profile(options.agent, agents_folder)
    except InvalidInput as exc:
        return [Check(name=name, status=WARN, detail=f"{key}: {exc.message}")]
    whose = f"agent {agent.name}" if agent is not None else "a plain command"
    environ = {k: v for k, v in environ.items() if k != PROVIDER_ENV_VARIABLE}
    sifted = settings.env.for_task(environ, agent.env if agent is not None else ())
    passed = f"{whose} gets {', '.join(sorted(sifted.kept)) or 'nothing from here'}"
    details = [passed]
    provider = options.provider or (agent.provider if agent is not None else None)
    config = settings.providers.get(provider) if provider is not None else None
    if config is not None and config.env:
        details.append(f"[providers.{provider}] env adds {', '.join(n for n, _ in config.env)}")
    reasons: dict[str, list[str]] = {}
    for withheld in sifted.withheld_names:
        reasons.setdefault(sifted.withheld[withheld], []).append(withheld)
    details += [f"withheld, {why}: {', '.join(names)}" for why, names in sorted(reasons.items())]
    return [Check(name=name, status=OK, detail=detail) for detail in details]


def pool_programs(settings: Settings, agents_folder: str) -> list[Check]:
    """Each pool group's program (`[[pool.group]]`; without groups, the `[pool]` agent or
    exec when one is set): its agent profile loads and its command is on PATH, or its exec
    is; a check named `pool` or `pool group NAME` (warn: that group's workers will not
    start)."""
    grouped = bool(settings.pool_groups)
    checks = []
    for group in settings.pool.groups:
        options = group.options
        if not grouped and not (options.agent or options.exec):
            continue
        name = f"pool group {group.name}" if grouped else "pool"
        try:
            detail = _program(options, agents_folder)
        except InvalidInput as exc:
            checks.append(Check(name=name, status=WARN, detail=f"will not start: {exc.message}"))
            continue
        checks.append(Check(name=name, status=OK, detail=detail))
    return checks


def _program(options: WorkerOptions, agents_folder: str) -> str:
    """What a worker of `options` runs, found; InvalidInput names the option that fails."""
    exec_argv = _split_exec(options.exec) if options.exec else ()
    if options.agent:
        profile = load_profile(options.agent, agents_folder, exec_argv=exec_argv)
        path = _found("agent", profile.command[0])
        return f"agent {profile.name}: {path}"
    if exec_argv:
        return f"exec {_found('exec', exec_argv[0])}"
    raise InvalidInput("exec", "a command (exec) or an agent profile (agent) for the group")


def _split_exec(line: str) -> tuple[str, ...]:
    try:
        argv = tuple(shlex.split(line))
    except ValueError:
        raise InvalidInput("exec", "a command line with balanced quotes", line) from None
    if not argv:
        raise InvalidInput("exec", "a command to run", line)
    return argv


def _found(field: str, program: str) -> str:
    """`program`'s path on PATH; InvalidInput naming `field` when it is not there."""
    path = shutil.which(program)
    if path is None:
        raise InvalidInput(field, "a program on PATH, or the path of an executable", program)
    return path


def _profile(name: str, agents_folder: str) -> AgentProfile | None:
    """The agent profile `name` (None: none, or `generic`, which declares no variable)."""
    if not name or name == GENERIC:
        return None
    return load_profile(name, agents_folder)
