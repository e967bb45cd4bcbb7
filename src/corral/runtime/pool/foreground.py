"""`orchestrator start` in this process: the orchestrator placed in the store's folder, its
pid file while it holds the store, the config's queue limits applied once it does, and
its task lines on stdout (with `--daemon`, the log's).

Kept apart from corral.runtime.pool.control so that stopping a worker or the orchestrator
does not import the whole pool (tens of milliseconds of every such command's start-up).
"""

from __future__ import annotations

import os
import sys

from corral.foundation import filemodes
from corral.foundation.settings import Settings
from corral.runtime.pool.control import pid_file, pool_layout
from corral.runtime.pool.orchestrator import Orchestrator, Placement
from corral.store import Store
from corral.store.location import config_path
from corral.usecases.queues import apply_configured_limits
from corral.usecases.usage import apply_configured_providers


def prepare(store: Store, *, db: str, settings: Settings, host: str) -> Orchestrator:
    """The orchestrator of store `db` on `host`. InvalidInput if `settings` cannot run a
    pool: checked before anything starts, so `--daemon` says so before it detaches."""
    named = os.environ.get("CORRAL_CONFIG")  # the file these settings came from travels on
    config = os.path.abspath(named) if named else config_path(db)
    placement = Placement(db=db, config_path=config, layout=pool_layout(db), host=host)
    return Orchestrator(store, settings=settings, placement=placement, task_lines=sys.stdout)


def run(orchestrator: Orchestrator, store: Store, *, db: str, settings: Settings) -> int:
    """Run `orchestrator` here until it is stopped; its exit code."""
    path = pid_file(db)

    def on_held() -> None:
        _write_pid_file(path)
        apply_configured_limits(store, settings)
        apply_configured_providers(store, settings)

    try:
        return orchestrator.run(on_held=on_held)
    finally:
        _remove_pid_file(path)


def _write_pid_file(path: str) -> None:
    # On PostgreSQL the folder is `.corral/` under the current one, which may not exist yet.
    filemodes.make_dirs(os.path.dirname(path))
    with open(filemodes.open_file(path, os.O_WRONLY | os.O_TRUNC), "w", encoding="utf-8") as pid:
        pid.write(f"{os.getpid()}\n")


def _remove_pid_file(path: str) -> None:
    """Remove the pid file if it is this process's (a refused start must not remove the
    running orchestrator's)."""
    try:
        with open(path, encoding="utf-8") as handle:
            mine = handle.read().strip() == str(os.getpid())
    except OSError:
        return
    if mine:
        os.unlink(path)
