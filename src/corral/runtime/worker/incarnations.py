"""Earlier runners of this name on this host that died: their claims released at once.

A runner restarted under the same name (by its pool, systemd, a bash loop) finds the
workers its dead predecessors registered, ends the processes their unfinished runs left
behind (found by CORRAL_RUN_ID), and has the reconciler's recovery return their tasks to
the queue now, instead of after the dead-worker window. A pid is taken for dead only if no
process with it started before it was recorded (processes.py: pids are reused).
"""

from __future__ import annotations

import logging
import os
import random

from corral import reconcile
from corral.clock import Clock
from corral.logs import event
from corral.model.states import WATCHED
from corral.processes import process_alive
from corral.runtime.worker.executor import end_marked_processes
from corral.settings import Settings
from corral.store import Store


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
    for worker in store.list_workers(tuple(WATCHED)):
        if worker.name != name or worker.hostname != host:
            continue
        if process_alive(worker.pid, worker.registered_at.timestamp()):
            continue
        for run in store.unfinished_runs(worker.id):
            ended = end_marked_processes(run.id, clock=clock)
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
