"""Claims this runner made without learning of them: found in the store, and adopted.

An exchange can commit and its reply be lost (the connection dropped after COMMIT, the
server restarted): the store then holds claims, each with its open run, that the runner
never saw. Left alone, each would hold its task until the worker stops, and count
against the worker's `max_concurrent` for ever. So after an exchange whose outcome is
unknown, the runner's next exchange first asks the store for this worker's unfinished
runs; each one the runner does not know, whose claim is still active under the run's
token, is adopted: watched by the heartbeat and run like a task just claimed (logged as
`claim.adopted`). Its task was claimed once, and runs once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from corral.foundation.logs import event
from corral.model.exchange import Held
from corral.model.runs import Run
from corral.runtime.worker.config import Workplace
from corral.runtime.worker.jobs import Opened, Runs


def orphaned_claims(
    place: Workplace, runs: Runs[Any], known: Callable[[Run], bool]
) -> list[tuple[Held, Opened[Any]]]:
    """This worker's active claims whose runs are not `known`, each held again and its run
    opened by the job as at the claim."""
    store, found = place.store, []
    for run in store.runs.unfinished_runs(place.worker_id):
        if known(run):
            continue
        claim = store.claims.active_claim(run.task_id)
        if claim is None or claim.token != run.token or claim.worker_id != place.worker_id:
            continue  # ended elsewhere: the reconciler finishes its run
        task = store.tasks.get_task(run.task_id)
        held = Held(
            task=task,
            token=claim.token,
            run_id=run.id,
            lease_expires_at=claim.lease_expires_at,
            claimed_at=claim.claimed_at,
            deadline_at=claim.deadline_at,
        )
        found.append((held, runs.open(task, claim.token, run.id)))
        event(
            place.log,
            "claim.adopted",
            worker_id=place.worker_id,
            task_id=task.id,
            run_id=run.id,
            token=claim.token,
        )
    return found
