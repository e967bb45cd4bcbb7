"""corral: a headless orchestrator for fleets of long-running workers.

The public Python API. Everything here is tested to exist (tests/unit/test_public_api.py);
anything not listed in `__all__` may change without notice.

    import corral
    with corral.open_store("corral.db") as store:
        task = corral.enqueue(store, corral.NewTask(title="Fix the login bug", kind="code"))
        beat = corral.register(store, corral.NewWorker(name="w1", kinds=("code",)))
        claim = corral.claim_next(store, beat.worker.id)
        corral.complete(store, claim.task_id, token=claim.token)

Names load on first use (PEP 562), so `import corral` costs almost nothing: every CLI
command is a fresh process, and its start-up time is part of the product.
"""

from __future__ import annotations

from importlib import import_module

__version__ = "0.1.0"
from typing import TYPE_CHECKING, Any

_HOMES = {
    "corral.backpressure": ["QueueStat"],
    "corral.clock": ["Clock", "FakeClock", "SystemClock"],
    "corral.diagnosis": ["Diagnosis", "why"],
    "corral.errors": [
        "CorralError",
        "InvalidInput",
        "InvalidTransition",
        "LimitReached",
        "NotFound",
        "Refused",
        "SchemaTooNew",
        "StaleToken",
        "StoreError",
        "WorkerUnavailable",
    ],
    "corral.events": ["Event", "EventFilter"],
    "corral.leases": ["Claim", "ClaimStatus"],
    "corral.queue": [
        "cancel",
        "claim",
        "claim_next",
        "complete",
        "defer",
        "enqueue",
        "fail",
        "release",
        "renew",
        "retry",
    ],
    "corral.queue_limits": ["apply_configured_limits", "queue_stats", "set_queue_limits"],
    "corral.reconciler": ["ReconcileReport", "reconcile_once"],
    "corral.registry": ["Beat", "deregister", "drain", "heartbeat", "register"],
    "corral.runtime.worker_api": ["run_worker"],
    "corral.runs": ["NewRun", "Run", "RunOutcome"],
    "corral.policies": ["QueueLimits"],
    "corral.settings": ["Settings", "load_settings"],
    "corral.store": ["Store", "open_store"],
    "corral.tasks": ["NewTask", "Task", "TaskFilter", "TaskStatus"],
    "corral.workers": ["NewWorker", "Worker", "WorkerStatus"],
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str) -> Any:
    """Import the module that defines `name` the first time it is asked for."""
    module = _HOME_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'corral' has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_HOME_OF])


if TYPE_CHECKING:
    from corral.backpressure import QueueStat
    from corral.clock import Clock, FakeClock, SystemClock
    from corral.diagnosis import Diagnosis, why
    from corral.errors import (
        CorralError,
        InvalidInput,
        InvalidTransition,
        LimitReached,
        NotFound,
        Refused,
        SchemaTooNew,
        StaleToken,
        StoreError,
        WorkerUnavailable,
    )
    from corral.events import Event, EventFilter
    from corral.leases import Claim
    from corral.policies import QueueLimits
    from corral.queue import (
        cancel,
        claim,
        claim_next,
        complete,
        defer,
        enqueue,
        fail,
        release,
        renew,
        retry,
    )
    from corral.queue_limits import apply_configured_limits, queue_stats, set_queue_limits
    from corral.reconciler import ReconcileReport, reconcile_once
    from corral.registry import Beat, deregister, drain, heartbeat, register
    from corral.runs import NewRun, Run, RunOutcome
    from corral.runtime.worker_api import run_worker
    from corral.settings import Settings, load_settings
    from corral.states import ClaimStatus, TaskStatus, WorkerStatus
    from corral.store import Store, open_store
    from corral.tasks import NewTask, Task, TaskFilter
    from corral.workers import NewWorker, Worker

__all__ = [
    "Beat",
    "Claim",
    "ClaimStatus",
    "Clock",
    "CorralError",
    "Diagnosis",
    "Event",
    "EventFilter",
    "FakeClock",
    "InvalidInput",
    "InvalidTransition",
    "LimitReached",
    "NewRun",
    "NewTask",
    "NewWorker",
    "NotFound",
    "QueueLimits",
    "QueueStat",
    "ReconcileReport",
    "Refused",
    "Run",
    "RunOutcome",
    "SchemaTooNew",
    "Settings",
    "StaleToken",
    "Store",
    "StoreError",
    "SystemClock",
    "Task",
    "TaskFilter",
    "TaskStatus",
    "Worker",
    "WorkerStatus",
    "WorkerUnavailable",
    "apply_configured_limits",
    "cancel",
    "claim",
    "claim_next",
    "complete",
    "defer",
    "deregister",
    "drain",
    "enqueue",
    "fail",
    "heartbeat",
    "load_settings",
    "open_store",
    "queue_stats",
    "reconcile_once",
    "register",
    "release",
    "renew",
    "retry",
    "run_worker",
    "set_queue_limits",
    "why",
]
