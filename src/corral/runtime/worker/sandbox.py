"""A task's command in a sandbox (`--sandbox bwrap|container`): the engine checked when a
worker starts, and each run's view of the host found from the world.

Only the command's process tree is inside: the runner, its heartbeat and its fencing
stay outside, and the executor starts the sandbox's engine in place of the command
(`CommandSpec.wrapper`), in a session of its own as any command. What the tree sees
(model/sandboxes.py turns it into the command line):

    read-only   the host (/), the command's program with its installation and its
                interpreter's (a venv, a Node prefix, an npm package), the repository's
                main checkout and git common dir (even under a hidden folder), its
                objects included
    writable    the worktree (or the workdir), its git metadata that a commit writes
                (.git/worktrees/NAME, logs, its branch's folder of refs, whose other
                loose refs are bound read-only over themselves), the run's own
                object folder (.git/corral-objects/NAME, lent before the run and brought
                into .git/objects after it: git/run_objects.py), the profile's
                `sandbox_home` entries under HOME, the run's outbox
    hidden      /tmp (a private one), HOME and the user's home folder (so ~/.ssh),
                the store's folder (`.corral/`: the SQLite file and its -wal/-shm, the
                runs, other workers' temporary folders), the folder of task worktrees
                (other tasks' work); a SQLite store's files (its lock file too) and
                corral's lock files in the git directory are covered by /dev/null
                wherever they are: `flock` needs no write permission, and an agent
                holding one would stall the fleet (git/repo_lock.py)
    network     none but a loopback of its own with `--network off`

Inside, TMPDIR and CORRAL_WORKER_TMP are /tmp, and in a linked worktree
GIT_OBJECT_DIRECTORY and GIT_ALTERNATE_OBJECT_DIRECTORIES send git's new objects to the
run's folder; the rest of the task environment is as corral.foundation.task_env filtered
it. A workdir that is a main checkout has its .git writable with it: nothing protects its
objects there.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
from contextlib import suppress
from dataclasses import dataclass

from corral.foundation.errors import InvalidInput
from corral.foundation.process_keys import RUN_KEY_ENV
from corral.git import ref_files, run_objects
from corral.git.repo_lock import lock_files
from corral.model.agents import AgentProfile
from corral.model.sandboxes import (
    CONTAINER_ENGINES,
    NETWORKS,
    SANDBOXES,
    Access,
    Mount,
    SandboxPlan,
    wrapper,
)
from corral.runtime.worker.executor import RUN_ID_ENV

PROBE_TIMEOUT_S = 20.0
PRIVATE_TMP = "/tmp"  # noqa: S108 - a private tmpfs inside the sandbox, not the host's
# The engine's package, for the one line that refuses a start without it.
INSTALL = {"bwrap": "apt-get install bubblewrap", "container": "apt-get install podman"}


@dataclass(frozen=True, slots=True, kw_only=True)
class Sandbox:
    """How a worker's commands are contained: the kind, its engine, the network, and the
    agent's own entries under HOME (its profile's `sandbox_home`)."""

    kind: str  # bwrap | container
    engine: str  # the engine's absolute path, checked to work
    network: bool
    home_entries: tuple[str, ...] = ()

    def contain(
        self,
        argv0: str,
        *,
        root: str,
        cwd: str,
        env: dict[str, str],
        state_dir: str,
        files: dict[str, Access],
        run_id: str,
        store_file: str | None = None,
    ) -> tuple[tuple[str, ...], dict[str, str]]:
        """The words that run a command of program `argv0` in the sandbox, in `cwd` inside
        `root` (its worktree or workdir), and its environment as seen inside. `files`
        are the run's own files under the hidden store folder (its outbox, its prompt),
        which must exist when the command starts. `store_file` (a SQLite store's) is
        covered by /dev/null with its -wal, -shm, -journal and lock file, wherever it is."""
        view = _git_view(root, env)
        inside = {**env, **view.env, "TMPDIR": PRIVATE_TMP, "CORRAL_WORKER_TMP": PRIVATE_TMP}
        mounts = [Mount(path=PRIVATE_TMP, access=Access.HIDDEN)]
        mounts += self._home(env.get("HOME"))
        mounts += [Mount(path=_real(state_dir), access=Access.HIDDEN)]
        hidden = tuple(m.path for m in mounts if m.access is Access.HIDDEN)
        mounts += _program(argv0, env.get("PATH"), hidden)
        mounts += [Mount(path=_real(root), access=Access.WRITABLE), *view.mounts]
        mounts += [Mount(path=_real(p), access=a) for p, a in files.items()]
        plan = SandboxPlan(
            kind=self.kind,
            engine=self.engine,
            network=self.network,
            cwd=_real(cwd),
            mounts=tuple(mounts),
            # The executor adds the run's marks when it starts the engine: passed on too.
            env_names=tuple(sorted({*inside, RUN_ID_ENV, RUN_KEY_ENV}))
            if self.kind == "container"
            else (),
            name=f"corral-{run_id}" if self.kind == "container" else "",
            emptied=(*_store_files(store_file), *view.locks),
            kept=view.refs,
        )
        return wrapper(plan), inside

    def _home(self, home: str | None) -> list[Mount]:
        """HOME and the user's home folder hidden (those that exist: a system user's may
        not, and nothing can be mounted where no folder is), the agent's own entries
        bound back."""
        homes = {_real(h) for h in (home, _user_home()) if h and os.path.isdir(h)} - {"/"}
        mounts = [Mount(path=h, access=Access.HIDDEN) for h in homes]
        if home:
            for entry in self.home_entries:
                # Bound where the agent looks (a link there, to dotfiles kept elsewhere, is
                # followed by the engine to what it names), not where it leads.
                path = os.path.join(_real(home), entry)
                if os.path.exists(path):
                    mounts.append(Mount(path=path, access=Access.WRITABLE))
        return mounts


def settle_objects(root: str) -> run_objects.Settled | None:
    """After a run in `root`: the objects its agent wrote in its own folder brought into
    the repository (git/run_objects.py), before corral's git touches the worktree; None
    where there was no folder to settle (a main checkout, a run that was not sandboxed)."""
    found = run_objects.linked(root)
    if found is None or not os.path.lexists(found.folder):
        return None
    return run_objects.settle(found)


def _store_files(path: str | None) -> tuple[str, ...]:
    """A SQLite store's files that exist now (while a runner has it open in WAL mode, its
    -wal and -shm do), links resolved."""
    if path is None:
        return ()
    names = (path, f"{path}-wal", f"{path}-shm", f"{path}-journal", f"{path}.lock")
    return tuple(_real(name) for name in names if os.path.isfile(name))


def _real(path: str) -> str:
    return os.path.realpath(path)


def _user_home() -> str | None:
    """The home folder of the user corral runs as, whatever HOME says."""
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


def _program(argv0: str, path: str | None, hidden: tuple[str, ...]) -> list[Mount]:
    """The command's program read-only where a hidden folder (HOME, /tmp) would hide it,
    with what it needs to start there: the installation it belongs to, and the
    interpreter its `#!` line names (looked up on the task's PATH for `#!/usr/bin/env
    NAME`) with its own. So an aider installed by pipx (a venv under HOME) or a codex
    installed by npm under nvm (the script, its package, node) starts in the sandbox as
    it does outside. What the host shows read-only anyway (`/usr/bin/bash`, `/usr/lib`)
    is not bound again, and no folder is bound that holds a hidden one (the store's)."""
    if not os.path.isabs(argv0) or not os.path.exists(argv0):
        return []
    found = {argv0, _real(argv0)}
    wanted = [argv0, _real(argv0)]
    interpreter = _interpreter(_real(argv0), path)
    if interpreter is not None:  # as named (a link in a prefix's bin stays a link) and real
        wanted += [interpreter, _real(interpreter)]
    for program in wanted:
        found |= {p for p in (program, *_installation(program)) if _inside(p, hidden)}
    # A path inside another bound folder is there already (and a link there could not be
    # bound over: the folder is read-only).
    outer = [p for p in found if not any(p.startswith(o + os.sep) for o in found)]
    return [Mount(path=p, access=Access.READ_ONLY) for p in sorted(outer)]


def _inside(path: str, folders: tuple[str, ...]) -> bool:
    """Whether `path` lies strictly inside one of `folders` and holds none of them."""
    within = any(path.startswith(f + os.sep) for f in folders)
    return within and not any(f == path or f.startswith(path + os.sep) for f in folders)


def _installation(real: str) -> list[str]:
    """The folders a program's real path is installed in, when they are a tool's own and
    nothing else's: a Python virtual environment (`pyvenv.cfg` above `bin/`), a Node
    prefix (`bin/` beside `lib/node_modules`, as nvm makes one per version: its `bin` and
    `lib`, not `etc`, whose npmrc may hold a registry token) or an npm package (the
    nearest `package.json` above it, inside `node_modules`). A plain `~/.local/bin` is
    none of these: its neighbours (`~/.local/share`) stay hidden."""
    folder = os.path.dirname(real)
    if os.path.basename(folder) == "bin":
        prefix = os.path.dirname(folder)
        if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")):
            return [prefix]
        if os.path.isdir(os.path.join(prefix, "lib", "node_modules")):
            return [folder, os.path.join(prefix, "lib")]
    while f"{os.sep}node_modules{os.sep}" in folder:
        if os.path.isfile(os.path.join(folder, "package.json")):
            return [folder]
        folder = os.path.dirname(folder)
    return []


def _interpreter(real: str, path: str | None) -> str | None:
    """The program a script's `#!` line runs (`env NAME`: NAME found on `path`), or None."""
    try:
        with open(real, "rb") as handle:
            line = handle.readline(256)
    except OSError:
        return None
    if not line.startswith(b"#!"):
        return None
    words = line[2:].decode("utf-8", "replace").split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env":
        named = [w for w in words[1:] if not w.startswith("-")]
        return shutil.which(named[0], path=path) if named else None
    return words[0] if os.path.isabs(words[0]) and os.path.exists(words[0]) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class _GitView:
    """What a run's repository adds to its sandbox."""

    mounts: list[Mount]
    env: dict[str, str]  # the variables that send its git's new objects to its own folder
    locks: tuple[str, ...]  # corral's lock files in the git directory, to cover
    refs: tuple[str, ...]  # the other refs in its branch's writable folder, kept read-only


def _git_view(root: str, env: dict[str, str]) -> _GitView:
    """For a linked worktree: the folder of task worktrees hidden, the repository's main
    checkout (with its git common dir, its objects too) read-only, and what a commit
    writes there writable (its own metadata, refs, logs: not config or hooks, which the
    runner's git would run); its new objects go to a folder of the run's own, lent now
    (git/run_objects.py), which the variables returned name (added to `env`'s); and
    corral's lock files in the common dir, to be covered. A main checkout's `.git` is
    writable with its root: its lock files are covered all the same."""
    found = run_objects.linked(root)
    if found is None:  # no .git, or a folder: a main checkout, writable with its root
        dotgit = os.path.join(root, ".git")
        locks = lock_files(_real(dotgit)) if os.path.isdir(dotgit) else ()
        return _GitView(mounts=[], env={}, locks=locks, refs=())
    gitdir, common = found.gitdir, found.common
    # The main checkout (or a bare repository) read-only, even where a hidden folder (a
    # private /tmp, HOME) holds it: a write there fails, it never lands in a tmpfs.
    checkout = os.path.dirname(common) if os.path.basename(common) == ".git" else common
    folder = run_objects.lend(found)
    mounts = [
        Mount(path=_real(os.path.dirname(_real(root))), access=Access.HIDDEN),
        Mount(path=checkout, access=Access.READ_ONLY),
        Mount(path=gitdir, access=Access.WRITABLE),
        Mount(path=folder, access=Access.WRITABLE),
        Mount(path=os.path.join(folder, "info"), access=Access.READ_ONLY),
        Mount(path=os.path.join(folder, "pack"), access=Access.READ_ONLY),
    ]
    if os.path.isdir(os.path.join(common, "logs")):
        mounts.append(Mount(path=os.path.join(common, "logs"), access=Access.WRITABLE))
    others: tuple[str, ...] = ()
    branch = _branch(gitdir)
    if branch is not None and (refs := _branch_refs(common, branch)) is not None:
        mounts.append(Mount(path=refs, access=Access.WRITABLE))
        own = os.path.join(common, "refs", "heads", branch)
        others = tuple(r for r in ref_files.loose_refs(common, refs) if r != own)
    return _GitView(
        mounts=mounts,
        env=run_objects.inside_env(found, env),
        locks=lock_files(_real(common)),
        refs=others,
    )


def _branch(gitdir: str) -> str | None:
    """The branch the worktree of `gitdir` has checked out (`corral/WORKER/TASK`), or None
    (a detached HEAD commits no branch)."""
    try:
        with open(os.path.join(gitdir, "HEAD"), encoding="utf-8") as handle:
            head = handle.read(4096).strip()
    except OSError:
        return None
    branch = head.removeprefix("ref: refs/heads/")
    return None if branch == head or ".." in branch.split("/") else branch


def _branch_refs(common: str, branch: str) -> str | None:
    """The folder of refs a commit on `branch` writes (the ref and its lock file, side by
    side): `refs/heads/corral/WORKER` for `corral/WORKER/TASK`, made if the ref is packed.
    The rest of `refs` stays read-only, so the agent cannot move the base (`main`), another
    worker's branches or corral's backup refs. A branch at the top of `refs/heads` gets
    that whole folder."""
    folder = os.path.join(common, "refs", "heads", os.path.dirname(branch))
    with suppress(OSError):
        os.makedirs(folder, exist_ok=True)
    return folder if os.path.isdir(folder) else None


def choose(
    sandbox: str, network: str, agent: AgentProfile | None, *, function: bool
) -> Sandbox | None:
    """The sandbox a worker's runs get: `--sandbox` (else the agent profile's, else off)
    with `--network` (else the profile's, else on), its engine checked; None when off.
    InvalidInput (exit 2) for an unknown value, a network that nothing could turn off, a
    function worker (it runs in the runner), or an engine missing or broken."""
    if sandbox not in ("", *SANDBOXES):
        raise InvalidInput("sandbox", f"one of {', '.join(SANDBOXES)}", sandbox)
    if network not in ("", *NETWORKS):
        raise InvalidInput("network", f"one of {', '.join(NETWORKS)}", network)
    kind = sandbox or (agent.sandbox if agent is not None else "off")
    if kind == "off":
        if network == "off":
            raise InvalidInput("network", "on unless runs are sandboxed (--sandbox)", network)
        return None
    if function:
        raise InvalidInput("sandbox", "off with --call (a function runs in the runner)", kind)
    chosen = network or (agent.network if agent is not None else "on")
    return Sandbox(
        kind=kind,
        engine=engine_for(kind),
        network=chosen == "on",
        home_entries=agent.sandbox_home if agent is not None else (),
    )


def engine_for(kind: str) -> str:
    """The absolute path of `kind`'s engine, if it is installed and works here; else
    InvalidInput (exit 2) in one line saying why and what to install."""
    path, problem = probe(kind)
    if problem is not None:
        raise InvalidInput("sandbox", f"{kind} installed and working ({INSTALL[kind]})", problem)
    assert path is not None
    return path


def probe(kind: str) -> tuple[str | None, str | None]:
    """(the engine's path, None) when `kind` works here; else (its path or None, why not).
    bwrap runs `true` over the host read-only in namespaces of its own; podman runs it in
    a container over the host's root (`--rootfs /`, last: no option is read after it)."""
    names = ("bwrap",) if kind == "bwrap" else CONTAINER_ENGINES
    found = next((p for p in map(shutil.which, names) if p is not None), None)
    if found is None:
        return None, f"{' or '.join(names)} not found on PATH"
    path = os.path.abspath(found)
    if kind == "bwrap":
        argv = [path, "--unshare-all", "--ro-bind", "/", "/", "true"]
    else:
        argv = [path, "run", "--rm", "--read-only", "--network", "none", "--rootfs", "/", "true"]
    try:
        # S603: a fixed argv, no shell.
        done = subprocess.run(  # noqa: S603
            argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return path, f"{os.path.basename(path)} cannot run: {exc}"
    if done.returncode != 0:
        lines = (done.stderr or done.stdout).strip().splitlines()
        why = lines[-1] if lines else f"exit status {done.returncode}"
        return path, f"{os.path.basename(path)} does not work here: {why}"
    return path, None
