"""The run of a stale report: finished apart, as what the task's own command reported.

A report whose claim is no longer active under its token changes nothing of its task
(the store hands it back as stale): the agent called `corral done` itself, or the
reconciler, a cancel or another worker ended the claim. Its run is still open, and is
finished here: with the outcome the task's command reported under this run's token
(read from the task's last events), else as lease_lost.

Kept in one function on purpose: it reconstructs an outcome from events, which the store
will instead record on the run when it happens; this module then goes.
"""

from __future__ import annotations

from corral.errors import Refused
from corral.model.batches import Report
from corral.model.events import EventFilter
from corral.model.runs import RunOutcome
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.retries import retrying

# What a task's own command may report under its token, and the run outcome each means.
_AGENT_REPORTS = {
    "task.completed": RunOutcome.DONE,
    "task.deferred": RunOutcome.DEFERRED,
    "task.retry_scheduled": RunOutcome.FAILED,
    "task.failed": RunOutcome.FAILED,
    "task.submitted": RunOutcome.DONE,
}


def finish_stale_run(r: Report, place: Workplace) -> RunOutcome:
    """Record the run of stale report `r` as what the task's own command reported under
    its token, else as lease_lost; the run's outcome."""
    store = place.store
    said = None
    for past in reversed(store.list_events(EventFilter(task_id=r.held.task.id, limit=20))):
        if (
            past.token == r.held.token
            and past.name in _AGENT_REPORTS
            and past.actor != "reconciler"
        ):
            said = _AGENT_REPORTS[past.name]
            break
    error = None
    if said is None:
        current = store.get_task(r.held.task.id)
        error = f"the claim ended while running (task is {current.status})"
    try:
        retrying(
            lambda: store.finish_run(
                r.held.run_id,
                outcome=said or RunOutcome.LEASE_LOST,
                exit_code=r.exit_code,
                error=error,
                usage=r.usage,
            ),
            place,
        )
    except Refused:  # closed already: this worker was declared dead meanwhile
        return store.get_run(r.held.run_id).outcome or RunOutcome.KILLED
    return said or RunOutcome.LEASE_LOST
