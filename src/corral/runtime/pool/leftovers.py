"""Processes a finished run left behind: found by the run id in their environment, proved
by the runs key, ended.

Every process a task's command starts inherits `CORRAL_RUN_ID`, `CORRAL_DB` and the
runner's runs key `CORRAL_RUN_KEY` (runtime/worker/executor.py). The runner ends its own
run's tree after each run; what escaped it (a dev server that daemonized after the runner
looked, or the tree of a runner that was killed before its run was finished as `killed`)
is found here: a live process of this store whose run has finished. A run id and a store
in an environment are no proof (anyone can start a `sleep` with them), so a process found
so is ended only if
- it runs as this user (never another user's, even when corral runs as root),
- the store knows its run, and the run has finished (a run the store does not know is
  never the reason to signal anything), and
- its environment, as it started, holds the runs key whose hash the run's worker
  recorded (corral.foundation.processes).
The ending signals exactly the processes found so, each by its psutil handle, which a
later process given the same pid does not answer to. The maintenance pass ends them
(corral.runtime.maintenance: the orchestrator's at each reconcile interval, and `corral
reconcile`); `corral status` lists them.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass

import psutil

from corral.foundation.clock import Clock
from corral.foundation.errors import NotFound
from corral.foundation.process_keys import RUN_KEY_ENV
from corral.foundation.processes import holds_key, is_mine
from corral.runtime.worker.executor import RUN_ID_ENV, end_processes
from corral.store import Store
from corral.store.urls import without_password

GRACE_S = 0.5  # SIGTERM to SIGKILL for a leftover; the orchestrator's loop waits meanwhile


@dataclass(frozen=True, slots=True, kw_only=True)
class Leftover:
    """A live process of a run that is over, proved the run's by its key."""

    pid: int
    run_id: str

    def to_dict(self) -> dict[str, object]:
        """The JSON shape in `corral status --json`."""
        return {"pid": self.pid, "run_id": self.run_id}


def find(store: Store) -> list[Leftover]:
    """Live processes of this store whose run has finished, proved by their key."""
    return [Leftover(pid=proc.pid, run_id=run_id) for proc, run_id in _found(store)]


def end(store: Store, *, clock: Clock) -> list[Leftover]:
    """End this store's leftovers (SIGTERM, then SIGKILL after GRACE_S); which they were."""
    found = _found(store)
    end_processes([proc for proc, _ in found], clock=clock, grace_s=GRACE_S)
    return [Leftover(pid=proc.pid, run_id=run_id) for proc, run_id in found]


def _found(store: Store) -> list[tuple[psutil.Process, str]]:
    """`find`'s processes, with the handles that signal them."""
    found: list[tuple[psutil.Process, str]] = []
    proofs: dict[str, str | None] = {}
    for proc, run_id in _marked(without_password(store.url)):
        if run_id not in proofs:
            proofs[run_id] = _proof_if_over(store, run_id)
        with suppress(psutil.Error):  # gone meanwhile
            if holds_key(proc, RUN_KEY_ENV, proofs[run_id]):
                found.append((proc, run_id))
    return found


def _proof_if_over(store: Store, run_id: str) -> str | None:
    """The hash of the runs key of the worker that ran `run_id`, if that run has finished;
    None if it runs still, or the store knows no such run or worker."""
    try:
        run = store.runs.get_run(run_id)
        return store.workers.get_worker(run.worker_id).runs_key_hash if run.finished else None
    except NotFound:
        return None


def _marked(db: str) -> list[tuple[psutil.Process, str]]:
    """(process, run id) of every live process of this user whose environment names store
    `db` (as tasks are given it: without its password) and a run."""
    marked = []
    for proc in psutil.process_iter():
        with suppress(psutil.Error):  # gone, a zombie, or not ours to read
            if not is_mine(proc):
                continue
            environ = proc.environ()
            run_id = environ.get(RUN_ID_ENV)
            if run_id and environ.get("CORRAL_DB") == db and proc.status() != psutil.STATUS_ZOMBIE:
                marked.append((proc, run_id))
    return marked
