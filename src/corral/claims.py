"""Use cases of the claim cycle: claim, claim the next task, exchange, renew, release,
defer, complete, fail.

Plain functions over a `Store`: each decides what policy says (lease length, renewal
bound, retry backoff) and hands the store one atomic change. `token` is the claim's
fencing token; without one the caller acts as an operator on whatever claim is active.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.durations import MAX_SPAN_S
from corral.errors import InvalidInput
from corral.model.events import OPERATOR
from corral.settings import Settings
from corral.store import Store

if TYPE_CHECKING:  # imported where used: a `corral claim` needs neither (its start-up time)
    import random

    from corral.model.backoff import Outcome
    from corral.model.batches import ClaimAsk, Exchanged, Report, RunStart
    from corral.model.claims import Claim
    from corral.model.tasks import Task

DEFAULTS = Settings()


def _actor(token: int | None, worker_id: str | None = None) -> str:
    if worker_id:
        return worker_id
    return f"token:{token}" if token is not None else OPERATOR


def _lease_s(lease_s: float | None, settings: Settings) -> float:
    """The lease asked for, or the default; bounded so its expiry is a readable instant."""
    if lease_s is None:
        return settings.lease_s
    if not 0 < lease_s <= MAX_SPAN_S:
        raise InvalidInput("lease", "a duration greater than zero and at most 100 years", lease_s)
    return lease_s


def claim(
    store: Store,
    task_id: str,
    worker_id: str,
    *,
    lease_s: float | None = None,
    settings: Settings = DEFAULTS,
) -> Claim:
    """Claim one named task for a worker; exactly one of several racing callers wins."""
    return store.claim(task_id, worker_id, lease_s=_lease_s(lease_s, settings), actor=worker_id)


def claim_next(
    store: Store,
    worker_id: str,
    *,
    kinds: tuple[str, ...] = (),
    queues: tuple[str, ...] = (),
    lease_s: float | None = None,
    settings: Settings = DEFAULTS,
) -> Claim | None:
    """Pick and claim the best ready task the worker may run, in one step; None if none."""
    return store.claim_next(
        worker_id,
        kinds=kinds,
        queues=queues,
        lease_s=_lease_s(lease_s, settings),
        actor=worker_id,
    )


def exchange(
    store: Store,
    worker_id: str,
    *,
    reports: Sequence[Report] = (),
    ask: ClaimAsk | None = None,
    open_run: Callable[[Task, int, str], RunStart] | None = None,
    settings: Settings = DEFAULTS,
    rng: random.Random | None = None,
) -> Exchanged:
    """Report finished tasks under their tokens and claim up to `ask.limit` more, in one step.

    Each failure's retry is decided here, by the retry policy, from the attempt its claim
    started (a claim still active means nobody changed the task since).
    """
    import random

    from corral.model.batches import Action

    chance = rng or random.Random()
    decided = [
        replace(r, retry=_after(r.held.task, settings, chance)) if r.action is Action.FAIL else r
        for r in reports
    ]
    if ask is not None:
        ask = replace(ask, lease_s=_lease_s(ask.lease_s, settings))
    return store.exchange(worker_id, reports=decided, ask=ask, open_run=open_run)


def _after(task: Task, settings: Settings, rng: random.Random) -> Outcome:
    from corral.model.backoff import after_failure

    return after_failure(
        attempts=task.attempts,
        max_attempts=task.max_attempts,
        base_s=task.retry_base_s,
        policy=settings.retry,
        rng=rng,
    )


def renew(
    store: Store,
    task_id: str,
    *,
    worker_id: str | None = None,
    token: int | None = None,
    lease_s: float | None = None,
    settings: Settings = DEFAULTS,
) -> Claim:
    """Extend a lease; refused past `max_renewals` so hung work cannot hold a task forever."""
    return store.renew(
        task_id,
        worker_id=worker_id,
        token=token,
        lease_s=_lease_s(lease_s, settings),
        max_renewals=settings.max_renewals,
        actor=_actor(token, worker_id),
    )


def release(
    store: Store,
    task_id: str,
    *,
    worker_id: str | None = None,
    token: int | None = None,
    reason: str | None = None,
) -> Task:
    """Give a claimed task back to the queue; the attempt is not counted."""
    return store.release(
        task_id, worker_id=worker_id, token=token, reason=reason, actor=_actor(token, worker_id)
    )


def defer(
    store: Store,
    task_id: str,
    *,
    until: float | datetime,
    token: int | None = None,
    reason: str | None = None,
) -> Task:
    """Step aside without failing: the task is ready again `until` seconds from now (or at
    that instant), and the attempt is not counted."""
    if isinstance(until, datetime):
        if until.tzinfo is None:
            raise InvalidInput("until", "an aware datetime (with a time zone)", until)
        delay_s, run_at = None, until
    else:
        if isinstance(until, bool) or not 0 <= until <= MAX_SPAN_S:  # NaN fails too
            raise InvalidInput("until", "a delay of 0 s to 100 years, or an instant", until)
        delay_s, run_at = float(until), None
    return store.defer(
        task_id, token=token, delay_s=delay_s, run_at=run_at, reason=reason, actor=_actor(token)
    )


def complete(store: Store, task_id: str, *, token: int | None = None, result: Any = None) -> Task:
    """Report success: done, or in_review when the task requires review."""
    return store.complete(task_id, token=token, result=result, actor=_actor(token))


def fail(
    store: Store,
    task_id: str,
    *,
    error: str,
    token: int | None = None,
    settings: Settings = DEFAULTS,
    rng: random.Random | None = None,
) -> Task:
    """Report failure: ready again after a backoff while attempts remain, else failed."""
    import random

    chance = rng or random.Random()

    def decide(task: Task) -> Outcome:
        return _after(task, settings, chance)

    return store.fail(task_id, token=token, error=error, decide=decide, actor=_actor(token))
