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

# The console script imports this package before it turns the garbage collector off
# (corral.cli.run): `typing` is left to the modules it imports after that.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

# The public names, by the module that defines them: the one list of the API. `__all__`
# is derived from it, and the TYPE_CHECKING imports below (for type checkers only) are
# checked against it by tests/unit/test_public_api.py.
_HOMES = {
    "corral.usecases.claims": [
        "claim",
        "claim_next",
        "complete",
        "defer",
        "fail",
        "release",
        "renew",
        "wait",
    ],
    "corral.foundation.clock": ["Clock", "FakeClock", "SystemClock"],
    "corral.usecases.diagnosis": ["Diagnosis", "why"],
    "corral.foundation.errors": [
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
    "corral.model.claims": ["Claim"],
    "corral.model.events": ["Event", "EventFilter"],
    "corral.model.queues": ["QueueStat"],
    "corral.model.runs": ["NewRun", "Run", "RunOutcome"],
    "corral.model.schedules": ["NewSchedule", "Overlap", "Schedule", "ScheduleFire"],
    "corral.model.states": ["ClaimStatus", "TaskStatus", "WorkerStatus"],
    "corral.model.tasks": ["NewTask", "Task", "TaskFilter"],
    "corral.model.workers": ["BeatFigures", "NewWorker", "Worker", "WorkerFilter"],
    "corral.foundation.policies": ["QueueLimits"],
    "corral.usecases.queues": ["apply_configured_limits", "queue_stats", "set_queue_limits"],
    "corral.usecases.reconcile": ["ReconcileReport", "reconcile_once"],
    "corral.runtime.worker.api": ["run_worker"],
    "corral.usecases.schedules": ["add_schedule", "fire_due"],
    "corral.foundation.settings": ["Settings", "load_settings"],
    "corral.store": ["Store", "open_store"],
    "corral.usecases.tasks": ["answer", "cancel", "enqueue", "retry"],
    "corral.usecases.workers": ["Beat", "deregister", "drain", "heartbeat", "register"],
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}
__all__ = sorted(_HOME_OF)  # noqa: PLE0605 - derived from the one table above


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


if TYPE_CHECKING:  # `import X as X`: an explicit re-export for type checkers
    from corral.foundation.clock import Clock as Clock
    from corral.foundation.clock import FakeClock as FakeClock
    from corral.foundation.clock import SystemClock as SystemClock
    from corral.foundation.errors import CorralError as CorralError
    from corral.foundation.errors import InvalidInput as InvalidInput
    from corral.foundation.errors import InvalidTransition as InvalidTransition
    from corral.foundation.errors import LimitReached as LimitReached
    from corral.foundation.errors import NotFound as NotFound
    from corral.foundation.errors import Refused as Refused
    from corral.foundation.errors import SchemaTooNew as SchemaTooNew
    from corral.foundation.errors import StaleToken as StaleToken
    from corral.foundation.errors import StoreError as StoreError
    from corral.foundation.errors import WorkerUnavailable as WorkerUnavailable
    from corral.foundation.policies import QueueLimits as QueueLimits
    from corral.foundation.settings import Settings as Settings
    from corral.foundation.settings import load_settings as load_settings
    from corral.model.claims import Claim as Claim
    from corral.model.events import Event as Event
    from corral.model.events import EventFilter as EventFilter
    from corral.model.queues import QueueStat as QueueStat
    from corral.model.runs import NewRun as NewRun
    from corral.model.runs import Run as Run
    from corral.model.runs import RunOutcome as RunOutcome
    from corral.model.schedules import NewSchedule as NewSchedule
    from corral.model.schedules import Overlap as Overlap
    from corral.model.schedules import Schedule as Schedule
    from corral.model.schedules import ScheduleFire as ScheduleFire
    from corral.model.states import ClaimStatus as ClaimStatus
    from corral.model.states import TaskStatus as TaskStatus
    from corral.model.states import WorkerStatus as WorkerStatus
    from corral.model.tasks import NewTask as NewTask
    from corral.model.tasks import Task as Task
    from corral.model.tasks import TaskFilter as TaskFilter
    from corral.model.workers import BeatFigures as BeatFigures
    from corral.model.workers import NewWorker as NewWorker
    from corral.model.workers import Worker as Worker
    from corral.model.workers import WorkerFilter as WorkerFilter
    from corral.runtime.worker.api import run_worker as run_worker
    from corral.store import Store as Store
    from corral.store import open_store as open_store
    from corral.usecases.claims import claim as claim
    from corral.usecases.claims import claim_next as claim_next
    from corral.usecases.claims import complete as complete
    from corral.usecases.claims import defer as defer
    from corral.usecases.claims import fail as fail
    from corral.usecases.claims import release as release
    from corral.usecases.claims import renew as renew
    from corral.usecases.claims import wait as wait
    from corral.usecases.diagnosis import Diagnosis as Diagnosis
    from corral.usecases.diagnosis import why as why
    from corral.usecases.queues import apply_configured_limits as apply_configured_limits
    from corral.usecases.queues import queue_stats as queue_stats
    from corral.usecases.queues import set_queue_limits as set_queue_limits
    from corral.usecases.reconcile import ReconcileReport as ReconcileReport
    from corral.usecases.reconcile import reconcile_once as reconcile_once
    from corral.usecases.schedules import add_schedule as add_schedule
    from corral.usecases.schedules import fire_due as fire_due
    from corral.usecases.tasks import answer as answer
    from corral.usecases.tasks import cancel as cancel
    from corral.usecases.tasks import enqueue as enqueue
    from corral.usecases.tasks import retry as retry
    from corral.usecases.workers import Beat as Beat
    from corral.usecases.workers import deregister as deregister
    from corral.usecases.workers import drain as drain
    from corral.usecases.workers import heartbeat as heartbeat
    from corral.usecases.workers import register as register
