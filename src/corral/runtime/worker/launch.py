"""The last word before a command starts: is its claim still held?

A runner can be paused (SIGSTOP, a swapped-out machine, a store outage) between the claim
and the start of the command; meanwhile its worker may be declared dead and the task
claimed by another. So each command run, just before it starts its command,
launches through the store (`store.runs.launch_run`): one compare-and-set that
allows the start only while the claim is active, and records it. A run refused there
never starts, and is given back as `lease_lost`, "not started". A reconciler that declares
the worker dead meanwhile records such a run as lease_lost, not killed: nothing ran.

Python tasks (python_job.py) do not launch this way: they run in the runner's own process,
a write per call would cost more than the call, and their reports are fenced by their
token all the same.

A store that cannot be reached is asked again (waits from 0.05 s doubling to 1 s) until
it answers or the runner's stop is overdue: a task is started only once its claim is
known to be held.
"""

from __future__ import annotations

import logging

from corral.foundation.errors import StoreError
from corral.foundation.logs import event
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.jobs import Stop
from corral.runtime.worker.reports import Done, Ending

FIRST_WAIT_S = 0.05
MAX_WAIT_S = 1.0


def refused_launch(place: Workplace, run_id: str, stop: Stop) -> Done | None:
    """None when run `run_id` may start now; else the `Done` of a run that never started."""
    failures = 0
    while True:
        try:
            if place.store.runs.launch_run(run_id):
                return None
            return _not_started(place, run_id, "lease_lost", "its claim ended before it started")
        except StoreError as exc:
            if failures == 0:
                event(
                    place.log,
                    "run.launch_waiting",
                    logging.WARNING,
                    run_id=run_id,
                    error=exc.message,
                )
        reason = stop()
        if reason is not None:
            return _not_started(place, run_id, reason, "the store could not be reached")
        place.clock.sleep(min(MAX_WAIT_S, FIRST_WAIT_S * 2.0**failures))
        failures += 1


def _not_started(place: Workplace, run_id: str, reason: str, why: str) -> Done:
    """A run given back before it started anything, stopped for `reason`."""
    event(place.log, "run.not_started", run_id=run_id, reason=reason, why=why)
    return Done(
        ending=Ending.STOPPED, success=False, error=f"not started: {why}", stop_reason=reason
    )
