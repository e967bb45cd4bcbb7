"""The claim cycle on PostgreSQL: `claim_next` and `complete`, each one call of a function
on the server.

Why: on PostgreSQL every statement costs server CPU and client protocol work whether or
not the client waits for it (about 150 µs of the server's CPU each, bench/pg_claim_cycle.py
and docs/benchmarks.md section 11). The steps of a claim and a completion, run as named
queries from Python (claim_ops.py), are a dozen statements a cycle; the functions
`corral_claim_next` and `corral_complete` (sql/postgresql/schema.sql, installed on older
databases by migration 0008) run the same steps on the server in one call each.

Each call is a transaction of its own (`Driver.call`: autocommit, one round trip, no
BEGIN or COMMIT). Semantics are the Python path's, statement for statement, and the
conformance suite runs both stores through them. The functions decide nothing the store
does not hand them: the statuses a worker claims in and the transitions a completion
makes arrive as parameters from `corral.model.states`. A refused claim comes back as data, from
which this module raises the Python path's error. A refused completion changed nothing,
and the store then runs the Python path, which decides again in one transaction and
raises its precise error (StaleToken naming the holder, InvalidTransition naming the
state); should the task have changed in between, that path applies or refuses as any
later call would (a token once refused is refused for good: claims never come back).

SQLite keeps the Python path (`Driver.cycle_on_server` is False): its statements run
in-process under one write lock and cost no round trip, and SQLite has no stored
procedures. So the two named queries here are PostgreSQL's own, the one exception to
"both dialects define the same names" beside its session queries
(tests/store/test_sql_files.py), and SQLite's migration 0008 changes nothing: it keeps one
version number meaning one schema in both stores.
"""

from __future__ import annotations

from typing import Any

from corral import errors
from corral.model.states import ALLOWED_FROM, CLAIMING, WorkerStatus
from corral.store.claim_refusals import cannot_claim
from corral.store.driver import Driver, Json, Row


def claim_next(
    driver: Driver,
    worker_id: str,
    *,
    kinds: tuple[str, ...],
    queues: tuple[str, ...],
    lease_s: float,
    actor: str,
) -> Row | None:
    """Claim the first ready task `worker_id` may run; the claim's row, or None if none."""
    row = driver.call(
        "claim_next_on_server",
        worker_id=worker_id,
        kinds=list(kinds),
        queues=list(queues),
        claiming=CLAIMING,
        lease_s=lease_s,
        actor=actor,
    )
    if row is None:
        raise errors.NotFound("worker", worker_id)
    if row["token"] is not None:
        return row
    refusal = cannot_claim(
        worker_id, WorkerStatus(row["worker_status"]), row["active"], row["max_concurrent"]
    )
    if refusal is not None:
        raise refusal
    return None


def complete(
    driver: Driver, task_id: str, *, token: int | None, result: Any, actor: str
) -> Row | None:
    """Complete the task held under `token` (None: whatever claim is active); its row, or
    None when it has no active claim under `token` and nothing changed."""
    return driver.call(
        "complete_on_server",
        task_id=task_id,
        token=token,
        result=Json(result),
        allowed=ALLOWED_FROM["complete"],
        unblock=ALLOWED_FROM["unblock"],
        actor=actor,
    )
