"""Conformance: a task waits for a person (Action.WAIT), fenced, its attempt given back, and
leaves the wait by an answer, a retry or a cancel."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable

import pytest

import corral
from corral import (
    ClaimStatus,
    Event,
    EventFilter,
    FakeClock,
    InvalidInput,
    InvalidTransition,
    RunOutcome,
    Settings,
    StaleToken,
    Store,
    Task,
    TaskStatus,
    Worker,
    WorkerStatus,
)
from corral.model.budgets import BudgetRaise
from corral.model.exchange import Action, ClaimAsk, Held, Report, RunStart
from corral.model.waiting import WaitKind, reason
from corral.usecases import claims

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
Names = Callable[..., list[str]]
RUN = RunStart(command=("agent",), cwd="/work")
REFUSED = reason(WaitKind.REFUSED, "Bash, Edit")


def _held(store: Store, worker_id: str, settings: Settings) -> Held:
    (held,) = claims.exchange(
        store, worker_id, ask=ClaimAsk(limit=1, run=RUN), settings=settings
    ).held
    return held


def _waits(store: Store, held: Held, why: str = REFUSED) -> None:
    """The runner reports that its run ended needing a person."""
    report = Report.of(held, Action.WAIT, RunOutcome.WAITING, reason=why, exit_code=0)
    assert () == store.claims.exchange(held.task.worker_id, reports=[report]).stale


def _last(store: Store, task_id: str, name: str) -> Event:
    return [e for e in store.events.list_events(EventFilter(task_id=task_id)) if e.name == name][-1]


def test_a_run_that_needs_a_person_leaves_its_task_waiting_with_the_reason(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """WAIT under the claim's token: waiting, the reason kept, the attempt given back, the
    claim released, the worker idle with nothing done or failed."""
    task, w = add(max_attempts=1), worker()
    held = _held(store, w.id, settings)
    _waits(store, held)
    waiting = store.tasks.get_task(task.id)
    assert (TaskStatus.WAITING, REFUSED, 0, None, None) == (
        waiting.status,
        waiting.wait_reason,
        waiting.attempts,
        waiting.token,
        waiting.finished_at,
    )
    claim = store.claims.claim_by_token(held.token)
    assert claim is not None
    assert ClaimStatus.RELEASED == claim.status
    after = store.workers.get_worker(w.id)
    assert (WorkerStatus.IDLE, 0, 0, 0) == (
        after.status,
        after.active,
        after.completed_total,
        after.failed_total,
    )


def test_the_wait_is_an_event_and_the_run_ends_waiting(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """task.waiting says running -> waiting, why, who and under which token; the run ends
    `waiting` and its run.finished says so."""
    task, w = add(), worker()
    held = _held(store, w.id, settings)
    _waits(store, held)
    event = _last(store, task.id, "task.waiting")
    assert ("running", "waiting", REFUSED, w.id, held.token) == (
        event.from_status,
        event.to_status,
        event.reason,
        event.worker_id,
        event.token,
    )
    run = store.runs.get_run(held.run_id or "")
    assert (RunOutcome.WAITING, 0) == (run.outcome, run.exit_code)
    finished = _last(store, task.id, "run.finished")
    assert {"run_id": held.run_id, "outcome": "waiting", "exit_code": 0} == finished.data


def test_a_waiting_task_is_not_claimed(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Nothing claims a waiting task: a person must act first."""
    task, w = add(), worker()
    _waits(store, _held(store, w.id, settings))
    assert None is corral.claim_next(store, w.id, settings=settings)
    assert TaskStatus.WAITING == store.tasks.get_task(task.id).status


def test_a_wait_under_a_stale_token_changes_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names
) -> None:
    """After a release and a new claim, the old token cannot make the task wait."""
    task, w = add(), worker()
    old = corral.claim(store, task.id, w.id, settings=settings)
    corral.release(store, task.id, token=old.token)
    new = corral.claim(store, task.id, w.id, settings=settings)
    before, seen = store.tasks.get_task(task.id), events()
    with pytest.raises(StaleToken, match=f"now held under token {new.token}"):
        corral.wait(store, task.id, reason=REFUSED, token=old.token)
    assert before == store.tasks.get_task(task.id)
    assert seen == events()


def test_a_runners_stale_wait_report_leaves_the_task_as_it_is(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Cancelled while it ran: the runner's WAIT is stale, the task stays cancelled and its
    run ends lease_lost."""
    task, w = add(), worker()
    held = _held(store, w.id, settings)
    corral.cancel(store, task.id)
    report = Report.of(held, Action.WAIT, RunOutcome.WAITING, reason=REFUSED)
    done = store.claims.exchange(w.id, reports=[report])
    assert ((report,), {held.run_id: "lease_lost"}) == (done.stale, done.settled)
    assert (TaskStatus.CANCELLED, None) == (
        store.tasks.get_task(task.id).status,
        store.tasks.get_task(task.id).wait_reason,
    )


def test_a_wait_reported_from_outside_the_run_is_how_the_run_ends(
    store: Store, settings: Settings, clock: FakeClock, add: Add, worker: MakeWorker
) -> None:
    """The agent reports the wait under its run's token, then its runner dies: the run ends
    `waiting`, not killed."""
    task, w = add(), worker()
    held = _held(store, w.id, settings)
    corral.wait(store, task.id, reason=REFUSED, token=held.token)
    clock.advance(settings.heartbeat_interval_s * (settings.dead_after_missed + 1))
    corral.reconcile_once(store, settings=settings)
    assert RunOutcome.WAITING == store.runs.get_run(held.run_id or "").outcome
    assert TaskStatus.WAITING == store.tasks.get_task(task.id).status


@pytest.mark.parametrize("why", ["", "   "])
def test_a_wait_needs_a_reason(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, why: str
) -> None:
    """A wait with no reason is invalid input, and the task keeps running."""
    task, w = add(), worker()
    claim = corral.claim(store, task.id, w.id, settings=settings)
    with pytest.raises(InvalidInput, match="reason"):
        corral.wait(store, task.id, reason=why, token=claim.token)
    report = Report(task_id=task.id, token=claim.token, action=Action.WAIT, actor="t")
    with pytest.raises(InvalidInput, match="reason"):
        store.claims.exchange(None, reports=[report])
    assert TaskStatus.RUNNING == store.tasks.get_task(task.id).status


def test_an_answer_sends_the_task_back_to_ready_with_the_answer(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """answer: ready now, the answer and the reason it answered kept for the next run, the
    wait's reason gone; task.answered carries the text."""
    task, w = add(), worker()
    _waits(store, _held(store, w.id, settings))
    answered = corral.answer(store, task.id, "  Yes, run the tests with Bash.  ")
    assert (TaskStatus.READY, None, "Yes, run the tests with Bash.", REFUSED, store.now()) == (
        answered.status,
        answered.wait_reason,
        answered.answer,
        answered.answered_reason,
        answered.run_after,
    )
    assert answered == store.tasks.get_task(task.id)
    event = _last(store, task.id, "task.answered")
    assert ("waiting", "ready", REFUSED, {"answer": "Yes, run the tests with Bash."}) == (
        event.from_status,
        event.to_status,
        event.reason,
        event.data,
    )


def test_the_next_claim_carries_the_answer(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """The task claimed after the answer holds it and the reason: what its runner tells the
    agent."""
    task, w = add(), worker()
    _waits(store, _held(store, w.id, settings))
    corral.answer(store, task.id, "use the staging database")
    again = _held(store, w.id, settings)
    assert (task.id, "use the staging database", REFUSED, 1) == (
        again.task.id,
        again.task.answer,
        again.task.answered_reason,
        again.task.attempts,
    )


@pytest.mark.parametrize("text", [None, "", "  "])
def test_an_answer_without_text_says_carry_on(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, text: str | None
) -> None:
    """No text (or only blanks) is no answer text; the reason answered is kept all the same."""
    task, w = add(), worker()
    _waits(store, _held(store, w.id, settings))
    answered = corral.answer(store, task.id, text)
    assert (TaskStatus.READY, None, REFUSED) == (
        answered.status,
        answered.answer,
        answered.answered_reason,
    )


def test_a_new_wait_forgets_the_earlier_answer(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """The answer is told to the runs after it until the task waits again."""
    task, w = add(), worker()
    _waits(store, _held(store, w.id, settings))
    corral.answer(store, task.id, "go ahead")
    question = reason(WaitKind.QUESTION, "which branch?")
    _waits(store, _held(store, w.id, settings), question)
    waiting = store.tasks.get_task(task.id)
    assert (question, None, None) == (
        waiting.wait_reason,
        waiting.answer,
        waiting.answered_reason,
    )


@pytest.mark.parametrize("status", ["ready", "running", "done"])
def test_an_answer_to_a_task_that_is_not_waiting_is_refused_and_changes_nothing(
    store: Store,
    settings: Settings,
    add: Add,
    worker: MakeWorker,
    events: Names,
    status: str,
) -> None:
    """Only a waiting task can be answered; the refusal names the current state."""
    task, w = add(), worker()
    if status != "ready":
        claim = corral.claim(store, task.id, w.id, settings=settings)
        if status == "done":
            corral.complete(store, task.id, token=claim.token)
    before, seen = store.tasks.get_task(task.id), events()
    with pytest.raises(InvalidTransition, match=f"cannot answer task {task.id}: it is {status}$"):
        corral.answer(store, task.id, "an answer")
    assert before == store.tasks.get_task(task.id)
    assert seen == events()


def test_a_retry_of_a_waiting_task_makes_it_ready_with_a_fresh_budget(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """retry from waiting: ready, the reason gone, no answer told."""
    task, w = add(), worker()
    _waits(store, _held(store, w.id, settings))
    retried = corral.retry(store, task.id)
    assert (TaskStatus.READY, None, None, 0) == (
        retried.status,
        retried.wait_reason,
        retried.answer,
        retried.attempts,
    )
    assert ("waiting", "ready") == (
        _last(store, task.id, "task.retried").from_status,
        _last(store, task.id, "task.retried").to_status,
    )


def test_a_cancel_of_a_waiting_task_ends_the_wait(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """cancel from waiting: cancelled, the reason gone, from `waiting` in its event."""
    task, w = add(), worker()
    _waits(store, _held(store, w.id, settings))
    cancelled = corral.cancel(store, task.id, reason="not needed")
    assert (TaskStatus.CANCELLED, None) == (cancelled.status, cancelled.wait_reason)
    assert "waiting" == _last(store, task.id, "task.cancelled").from_status


def test_a_dependent_of_a_waiting_task_stays_blocked(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Waiting is not done: what depends on the task waits with it."""
    task, w = add(), worker()
    dependent = add("after", depends_on=(task.id,))
    _waits(store, _held(store, w.id, settings))
    assert TaskStatus.BLOCKED == store.tasks.get_task(dependent.id).status


def test_why_says_the_task_waits_for_a_person_and_what_ends_it(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """`why` of a waiting task: code `waiting`, its reason, and answer, retry or cancel."""
    task, w = add(), worker()
    _waits(store, _held(store, w.id, settings))
    (found,) = corral.why(store, task.id, settings=settings).reasons
    assert "waiting" == found.code
    assert found.message.startswith(f"waiting for a person: {REFUSED}; `corral answer {task.id}")
    assert "`corral retry`" in found.message and "`corral cancel`" in found.message


@pytest.mark.parametrize(
    ("action", "outcome"),
    [
        (Action.COMPLETE, RunOutcome.DONE),
        (Action.FAIL, RunOutcome.FAILED),
        (Action.RELEASE, RunOutcome.KILLED),
    ],
)
def test_a_question_the_run_asked_is_gone_once_the_run_ends(
    store: Store,
    settings: Settings,
    add: Add,
    worker: MakeWorker,
    action: Action,
    outcome: RunOutcome,
) -> None:
    """A run flagged waiting (its agent asked) that then ends done, failed or killed shows
    no question any more: not on the run, its listing, nor on the task."""
    task, w = add(max_attempts=1), worker()
    held = _held(store, w.id, settings)
    asked = reason(WaitKind.QUESTION, "which file?")
    store.runs.mark_waiting(held.opened_run(), asked)
    assert asked == store.runs.get_run(held.opened_run()).waiting
    report = Report.of(held, action, outcome, exit_code=0, error="stopped")
    assert () == claims.exchange(store, w.id, reports=[report], settings=settings).stale
    ended = store.runs.get_run(held.opened_run())
    assert (outcome, None) == (ended.outcome, ended.to_dict()["waiting"])
    assert [None] == [r.waiting for r in store.runs.list_runs(task_id=task.id)]
    assert None is store.tasks.get_task(task.id).wait_reason


BUDGET = {"max_cost_usd": 1.0, "max_tokens": 2_000_000}


def test_an_answer_raises_a_budget_cap_in_the_same_transaction(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """answer --budget: the dollar or token cap in the payload raised, the task ready, the
    event saying by how much; the payload's other keys untouched."""
    task, w = add(payload={"budget": BUDGET, "workdir": "/w"}), worker()
    _waits(store, _held(store, w.id, settings), reason(WaitKind.BUDGET, "$1.02 of $1.00"))
    answered = corral.answer(store, task.id, None, budget=BudgetRaise(cost_usd=1.5))
    expected = {"budget": {"max_cost_usd": 2.5, "max_tokens": 2_000_000}, "workdir": "/w"}
    assert (TaskStatus.READY, expected) == (answered.status, answered.payload)
    assert {"answer": None, "budget_cost_usd": 1.5} == _last(store, task.id, "task.answered").data
    _waits(store, _held(store, w.id, settings), reason(WaitKind.BUDGET, "tokens"))
    answered = corral.answer(store, task.id, None, budget=BudgetRaise(tokens=500_000))
    assert 2_500_000 == answered.payload["budget"]["max_tokens"]
    assert 2.5 == answered.payload["budget"]["max_cost_usd"]


def test_raising_a_cap_the_task_lacks_or_of_a_task_not_waiting_changes_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    task, w = add(payload={"budget": {"max_tokens": 1000}}), worker()
    with pytest.raises(InvalidTransition):
        corral.answer(store, task.id, None, budget=BudgetRaise(tokens=5))
    _waits(store, _held(store, w.id, settings), reason(WaitKind.BUDGET, "tokens"))
    with pytest.raises(InvalidInput, match="budget"):
        corral.answer(store, task.id, None, budget=BudgetRaise(cost_usd=1.0))
    unchanged = store.tasks.get_task(task.id)
    assert (TaskStatus.WAITING, {"max_tokens": 1000}) == (
        unchanged.status,
        unchanged.payload["budget"],
    )
