"""Which workers' figures (CPU and memory, their own and their agents') are shown.

A worker's figures are those its last heartbeat carried, kept on its row. They describe a
process that runs only while the worker does: once it is dead or offline nobody measures
it, and a runner killed a moment ago (kill -9, a stop that took the host's processes
with it) still reads `busy` until its silence is noticed. So `status`, `worker status`
and `worker list` show a worker's figures only
- while it is not dead or offline, and
- when it runs on this host with a pid, only while that pid is provably its runner: alive,
  started when recorded, holding the key whose hash it registered
  (corral.foundation.processes); a program that registered without a key (`worker
  register` with no CORRAL_WORKER_KEY) has only its start time to go by. A worker of
  another host is taken at its status, which its heartbeats keep.
Otherwise the figures read None (`-`): not measured, rather than a dead process's last.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from corral.foundation.records import replace
from corral.model.states import GONE
from corral.model.workers import Worker


def measured(workers: Sequence[Worker]) -> list[Worker]:
    """`workers`, each with its figures blanked unless they can describe a live runner."""
    host = os.uname().nodename
    return [w if _holds(w, host) else _unmeasured(w) for w in workers]


def _holds(worker: Worker, host: str) -> bool:
    if worker.status in GONE:
        return False
    if worker.hostname != host or worker.pid is None:
        return True
    from corral.foundation import processes  # noqa: PLC0415 - psutil: only for a pid here

    if worker.key_hash is None:
        return processes.runs_as_recorded(
            worker.pid,
            started_s=worker.pid_started_at,
            registered_at_s=worker.registered_at.timestamp(),
        )
    return processes.is_corral_process(
        worker.pid,
        key_hash=worker.key_hash,
        started_s=worker.pid_started_at,
        registered_at_s=worker.registered_at.timestamp(),
    )


def _unmeasured(worker: Worker) -> Worker:
    return replace(
        worker, cpu_percent=None, rss_bytes=None, agent_cpu_percent=None, agent_rss_bytes=None
    )
