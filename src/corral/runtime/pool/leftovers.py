"""Processes a finished run left behind: found by the run id in their environment, ended.

Every process a task's command starts inherits `CORRAL_RUN_ID` and `CORRAL_DB`. The runner
ends its own run's tree after each run; what escaped it (a dev server that daemonized after
the runner looked, or the tree of a runner that was killed before its run was finished as
`killed`) is found here: a live process of this store whose run has finished, or whose run
the store does not know. That is the proof that a process is corral's own: its environment
names this store (as tasks are given it) and a run that is over; nothing else is ever
signalled (the ending signals exactly the processes found so, each by its psutil handle,
which a later process given the same pid does not answer to). The maintenance pass ends
them (corral.runtime.maintenance: the orchestrator's at each reconcile interval, and
`corral reconcile`); `corral status` lists them.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass

import psutil

from corral.clock import Clock
from corral.errors import NotFound
from corral.runtime.worker.executor import RUN_ID_ENV, end_processes
from corral.store import Store
from corral.store.urls import without_password

GRACE_S = 0.5  # SIGTERM to SIGKILL for a leftover; the orchestrator's loop waits meanwhile


@dataclass(frozen=True, slots=True, kw_only=True)
class Leftover:
    """A live process marked with a run that is over."""

    pid: int
    run_id: str

    def to_dict(self) -> dict[str, object]:
        """The JSON shape in `corral status --json`."""
        return {"pid": self.pid, "run_id": self.run_id}


def find(store: Store) -> list[Leftover]:
    """Live processes of this store whose run has finished or is unknown to it."""
    return [Leftover(pid=proc.pid, run_id=run_id) for proc, run_id in _found(store)]


def end(store: Store, *, clock: Clock) -> list[Leftover]:
    """End this store's leftovers (SIGTERM, then SIGKILL after GRACE_S); which they were."""
    found = _found(store)
    end_processes([proc for proc, _ in found], clock=clock, grace_s=GRACE_S)
    return [Leftover(pid=proc.pid, run_id=run_id) for proc, run_id in found]


def _found(store: Store) -> list[tuple[psutil.Process, str]]:
    """`find`'s processes, with the handles that signal them."""
    found, over = [], {}
    for proc, run_id in _marked(without_password(store.url)):
        if run_id not in over:
            over[run_id] = _is_over(store, run_id)
        if over[run_id]:
            found.append((proc, run_id))
    return found


def _is_over(store: Store, run_id: str) -> bool:
    try:
        return store.get_run(run_id).finished
    except NotFound:
        return True


def _marked(db: str) -> list[tuple[psutil.Process, str]]:
    """(pid, run id) of every live process whose environment names store `db` (as tasks are
    given it: without its password) and a run."""
    marked = []
    for proc in psutil.process_iter():
        with suppress(psutil.Error):  # gone, a zombie, or not ours to read
            environ = proc.environ()
            run_id = environ.get(RUN_ID_ENV)
            if run_id and environ.get("CORRAL_DB") == db and proc.status() != psutil.STATUS_ZOMBIE:
                marked.append((proc, run_id))
    return marked
