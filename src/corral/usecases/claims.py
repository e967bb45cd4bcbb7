"""Use cases of the claim cycle: claim, claim (or hold) the next task, exchange, renew,
release, defer, wait, complete, fail.

Plain functions over a `Store`: each decides what policy says (lease length, renewal
bound, retry backoff) and hands the store one atomic change. Claiming and reporting are
one store operation, the exchange (store/exchange.py): `complete` is an exchange with one
report, `claim_next` one with a claim of one, a runner's batch one with many. `token` is
the claim's fencing token; without one the caller acts as an operator on whatever claim is
active.

A refused exchange changed nothing; the store then says why (`why_not_held`,
`why_not_claimable`), read in a snapshot of its own. Should that read find nothing in the
way (the state changed in between), the operation is tried again: a stale token is refused
for good (tokens never come back), so only an operator's report or a claim can go round,
and each round is a fresh compare-and-set.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from corral.foundation import documents
from corral.foundation.durations import MAX_SPAN_S, check_instant
from corral.foundation.errors import CorralError, InvalidInput, Refused, WorkerUnavailable
from corral.foundation.settings import Settings
from corral.model.actors import OPERATOR
from corral.model.exchange import Action, ClaimAsk, Exchanged, Held, Report, RunStart
from corral.model.states import FINISHED_WELL, ClaimStatus
from corral.store import Store

if TYPE_CHECKING:
    import random

    from corral.model.backoff import Outcome
    from corral.model.claims import Claim
    from corral.model.tasks import Task

DEFAULTS = Settings()
# Rounds of "refused, yet nothing in the way" before giving up: each is a state change
# that raced this one, so more than a few means something keeps changing the task.
ROUNDS = 5
# The error a release that counts the attempt records (`release(attempt=True)`).
RELEASED_UNFINISHED = "released without finishing"


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


# -- claims ---------------------------------------------------------------------------------


def claim(
    store: Store,
    task_id: str,
    worker_id: str,
    *,
    lease_s: float | None = None,
    settings: Settings = DEFAULTS,
) -> Claim:
    """Claim one named task for a worker; exactly one of several racing callers wins."""
    ask = ClaimAsk(limit=1, task_id=task_id, lease_s=_lease_s(lease_s, settings), claims_only=True)
    for _ in range(ROUNDS):
        done = store.claims.exchange(worker_id, ask=ask)
        if done.claims:
            return done.claims[0]
        if done.refused is not None:
            raise WorkerUnavailable(done.refused)
        why = store.claims.why_not_claimable(task_id, worker_id, full=done.full)
        if why is not None:
            raise why
    raise _raced(task_id)


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
    ask = ClaimAsk(limit=1, kinds=kinds, queues=queues, lease_s=lease_s, claims_only=True)
    made = _next(store, worker_id, ask, settings).claims
    return made[0] if made else None


def hold_next(
    store: Store, worker_id: str, ask: ClaimAsk, *, settings: Settings = DEFAULTS
) -> Held | None:
    """`claim_next` of `ask`'s kinds and queues, answering the task itself with its lease,
    read in the claim's own transaction: what a client that keeps no copy of the task
    needs (the HTTP worker routes); None if there was nothing to claim."""
    held = _next(store, worker_id, ask._replace(limit=1, claims_only=False), settings).held
    return held[0] if held else None


def _next(store: Store, worker_id: str, ask: ClaimAsk, settings: Settings) -> Exchanged:
    """The exchange of `ask` alone (its lease filled in); WorkerUnavailable if the worker
    may take nothing now."""
    done = store.claims.exchange(
        worker_id, ask=ask._replace(lease_s=_lease_s(ask.lease_s, settings))
    )
    if done.refused is not None:
        raise WorkerUnavailable(done.refused)
    if done.full is not None:
        raise WorkerUnavailable(done.full)
    return done


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
    started (`Report.seen`: a claim still active means nobody changed the task since).
    """
    decided = _decided(reports, settings, rng)
    if ask is not None:
        ask = ask._replace(lease_s=_lease_s(ask.lease_s, settings))
    return store.claims.exchange(worker_id, reports=decided, ask=ask, open_run=open_run)


def _decided(
    reports: Sequence[Report], settings: Settings, rng: random.Random | None
) -> list[Report]:
    """The reports, each failure with its retry decided from the task its reporter saw."""
    if not any(r.action is Action.FAIL for r in reports):
        return list(reports)
    import random

    chance = rng or random.Random()
    decided = []
    for report in reports:
        if report.action is Action.FAIL:
            assert report.seen is not None, "a failure is reported with the task its claim holds"
            decided.append(report._replace(retry=_after(report.seen, settings, chance)))
        else:
            decided.append(report)
    return decided


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
    return store.claims.renew(
        task_id,
        worker_id=worker_id,
        token=token,
        lease_s=_lease_s(lease_s, settings),
        max_renewals=settings.max_renewals,
        actor=_actor(token, worker_id),
    )


# -- reports --------------------------------------------------------------------------------


def release(
    store: Store,
    task_id: str,
    *,
    worker_id: str | None = None,
    token: int | None = None,
    reason: str | None = None,
    attempt: bool = False,
    settings: Settings = DEFAULTS,
    rng: random.Random | None = None,
) -> Task:
    """Give a claimed task back to the queue; the attempt is not counted.

    With `attempt`, the holder gives it back after running it without finishing, and the
    attempt counts: it is a failure (RELEASED_UNFINISHED, and the reason), so the retry
    policy decides, ready again after the backoff or failed at max_attempts. A loop that
    releases what its agent did not finish then ends (`corral claim:release`). A task its
    agent finished already (done, in review or approved; under `token`'s claim when one is
    given) is returned as it is: that release changes nothing.
    """
    try:
        if attempt:
            error = RELEASED_UNFINISHED if reason is None else f"{RELEASED_UNFINISHED}: {reason}"
            return _fail(
                store,
                task_id,
                error=error,
                token=token,
                holder=worker_id,
                action="release",
                settings=settings,
                rng=rng,
            )
        return _release(store, task_id, worker_id=worker_id, token=token, reason=reason)
    except Refused:
        finished = _finished_by_its_agent(store, task_id, token)
        if finished is None:
            raise
        return finished


def _finished_by_its_agent(store: Store, task_id: str, token: int | None) -> Task | None:
    """The task, if a release of it is a no-op because it was finished already (its agent
    ran `done` or `submit`): done, in review or approved, and, when the release names a
    token, finished under that token's claim."""
    task = store.tasks.get_task(task_id)
    if task.status not in FINISHED_WELL:
        return None
    if token is not None:
        claim = store.claims.claim_by_token(token)
        if claim is None or claim.task_id != task_id or claim.status is not ClaimStatus.COMPLETED:
            return None
    return task


def _release(
    store: Store, task_id: str, *, worker_id: str | None, token: int | None, reason: str | None
) -> Task:
    report = Report(
        task_id=task_id,
        token=token,
        action=Action.RELEASE,
        actor=_actor(token, worker_id),
        holder=worker_id,
        reason=reason,
    )
    return _report(store, report, "release")


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
        delay_s, run_at = None, check_instant("until", until)
    else:
        if isinstance(until, bool) or not 0 <= until <= MAX_SPAN_S:  # NaN fails too
            raise InvalidInput("until", "a delay of 0 s to 100 years, or an instant", until)
        delay_s, run_at = float(until), None
    report = Report(
        task_id=task_id,
        token=token,
        action=Action.DEFER,
        actor=_actor(token),
        delay_s=delay_s,
        run_at=run_at,
        reason=reason,
    )
    return _report(store, report, "defer")


def wait(store: Store, task_id: str, *, reason: str, token: int | None = None) -> Task:
    """Step aside for a person: the task waits (`reason`, model/waiting.py says its form)
    until `answer`, `retry` or `cancel`, keeping its worktree; the attempt is not counted."""
    if not reason.strip():
        raise InvalidInput("reason", "why the task waits for a person", reason)
    documents.check_text("reason", reason)
    report = Report(
        task_id=task_id, token=token, action=Action.WAIT, actor=_actor(token), reason=reason
    )
    return _report(store, report, "wait")


def complete(store: Store, task_id: str, *, token: int | None = None, result: Any = None) -> Task:
    """Report success: done, or in_review when the task requires review."""
    documents.check("result", result)
    report = Report(
        task_id=task_id, token=token, action=Action.COMPLETE, actor=_actor(token), result=result
    )
    return _report(store, report, "complete")


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
    documents.check_text("error", error)
    return _fail(
        store,
        task_id,
        error=error,
        token=token,
        holder=None,
        action="fail",
        settings=settings,
        rng=rng,
    )


def _fail(
    store: Store,
    task_id: str,
    *,
    error: str,
    token: int | None,
    holder: str | None,
    action: str,
    settings: Settings,
    rng: random.Random | None,
) -> Task:
    """A failure under the claim `token` (and `holder`) names, `action` the command's name
    for a refusal's words. The retry is decided from the task as its claim holds it, read
    first; the report then names that claim, so a claim that changed meanwhile refuses it
    and it is decided again."""
    for _ in range(ROUNDS):
        seen = store.tasks.get_task(task_id)
        pinned = token if token is not None else seen.token
        if pinned is not None:
            report = Report(
                task_id=task_id,
                token=pinned,
                action=Action.FAIL,
                actor=_actor(token, holder),
                holder=holder,
                seen=seen,
                error=error,
            )
            decided = _decided([report], settings, rng)
            done = store.claims.exchange(None, reports=decided, return_tasks=True)
            if done.tasks:
                return done.tasks[0]
        why = store.claims.why_not_held(task_id, action=action, token=token, holder=holder)
        if why is not None:
            raise why
    raise _raced(task_id)


def _report(store: Store, report: Report, action: str) -> Task:
    """Apply one report; the task as it is then, or the error that says why it was refused."""
    for _ in range(ROUNDS):
        done = store.claims.exchange(None, reports=[report], return_tasks=True)
        if done.tasks:
            return done.tasks[0]
        why = store.claims.why_not_held(
            report.task_id, action=action, token=report.token, holder=report.holder
        )
        if why is not None:
            raise why
    raise _raced(report.task_id)


def _raced(task_id: str) -> CorralError:
    return CorralError(
        f"task {task_id} kept changing while this was tried {ROUNDS} times; try again"
    )
