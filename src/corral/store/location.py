"""Where the store is: `--db`, else CORRAL_DB, else the nearest `.corral/corral.db` upwards.

The CLI and `run_worker` find the same store the same way, as git finds `.git`.
"""

from __future__ import annotations

import os

from corral.foundation.errors import InvalidInput

DEFAULT_DIR = ".corral"
DB_NAME = "corral.db"


def find_db(cwd: str) -> str | None:
    """The nearest `.corral/corral.db` from `cwd` upwards, or None."""
    here = os.path.abspath(cwd)
    while True:
        candidate = os.path.join(here, DEFAULT_DIR, DB_NAME)
        if os.path.exists(candidate):
            return candidate
        parent = os.path.dirname(here)
        if parent == here:
            return None
        here = parent


def resolve_db(
    explicit: str | None, environ: dict[str, str] | os._Environ[str], cwd: str
) -> str | None:
    """`explicit`, else CORRAL_DB, else the nearest store upwards, else None."""
    return explicit or environ.get("CORRAL_DB") or find_db(cwd)


def config_path(db: str) -> str:
    """The config file read for store `db`: `config.toml` beside a SQLite file."""
    path = db.removeprefix("sqlite:///")
    folder = os.path.dirname(os.path.abspath(path)) if "://" not in path else "."
    return os.path.join(folder, "config.toml")


def state_dir(db: str) -> str:
    """The folder of a SQLite file (`.corral/`), else `.corral` in the folder the command runs
    in: runs, logs, temp dirs, pid file. Always absolute: its paths are handed to agents
    that run elsewhere (a worktree) and recorded for commands run from other folders."""
    path = db.removeprefix("sqlite:///")
    return (
        os.path.dirname(os.path.abspath(path))
        if "://" not in path
        else os.path.abspath(DEFAULT_DIR)
    )


def runs_dir(db: str) -> str:
    """Where run transcripts go: `runs/` beside a SQLite file, else `.corral/runs`."""
    return os.path.join(state_dir(db), "runs")


# The files of a run's output as `corral serve` keeps the copy a remote runner sends.
OUTPUT_SUFFIX = {"transcript": "jsonl", "stderr": "stderr"}


def shipped_output(db: str, run_id: str, stream: str) -> str:
    """Where the server keeps its copy of a remote run's `stream` (transcript or stderr)."""
    name = path_component("run_id", run_id)
    return os.path.join(runs_dir(db), "shipped", f"{name}.{OUTPUT_SUFFIX[stream]}")


def path_component(field: str, name: str) -> str:
    """`name`, if it is safe as one component of a path under corral's folders (a worker's
    log or temporary directory is named after it); else InvalidInput naming `field`."""
    if name in ("", ".", "..") or "/" in name or "\0" in name or len(name) > 100:
        expected = "a name usable as a file name (no '/', not '.' or '..', 1 to 100 characters)"
        raise InvalidInput(field, expected, name)
    return name


def is_inside(path: str, folder: str) -> bool:
    """Whether `path`, symbolic links resolved, lies inside `folder` (or is it)."""
    real, root = os.path.realpath(path), os.path.realpath(folder)
    return os.path.commonpath([real, root]) == root
