"""Earlier runners of this name on this host that died: their claims released at once.

A runner restarted under the same name (by its pool, systemd, a bash loop) finds the
workers its dead predecessors registered, ends the processes their unfinished runs left
behind (found by CORRAL_RUN_ID, proved by the runs key the dead worker recorded), and
has the reconciler's recovery return their tasks to the queue now, instead of after the
dead-worker window. A pid is taken for dead only if no
process with it started before it was recorded (foundation/processes.py: pids are reused).
"""

from __future__ import annotations

import logging
import os
import random

from corral.foundation.clock import Clock
from corral.foundation.logs import event
from corral.foundation.processes import process_alive
from corral.foundation.settings import Settings
from corral.model.states import WATCHED
from corral.runtime.worker.executor import end_marked_processes
from corral.store import Store
from corral.usecases import reconcile


def recover_dead_incarnations(
    store: Store,
    name: str,
    *,
    settings: Settings,
    clock: Clock,
    rng: random.Random,
    log: logging.Logger,
) -> None:
    """Release, at once, the claims of earlier runners of `name` on this host that died."""
    host = os.uname().nodename
    for worker in store.workers.list_workers(tuple(WATCHED)):
        if worker.name != name or worker.hostname != host:
            continue
        if process_alive(worker.pid, worker.registered_at.timestamp()):
            continue
        for run in store.runs.unfinished_runs(worker.id):
            ended = end_marked_processes(run.id, worker.runs_key_hash, clock=clock)
            event(log, "run.orphans_ended", run_id=run.id, processes=ended)
        report = reconcile.recover_worker(
            store,
            worker.id,
            reason=f"process {worker.pid} is gone (restarted)",
            settings=settings,
            rng=rng,
        )
        event(
            log,
            "worker.recovered_incarnation",
            worker_id=worker.id,
            pid=worker.pid,
            claims_expired=report.claims_expired,
        )
