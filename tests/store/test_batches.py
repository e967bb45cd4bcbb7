"""Conformance: `exchange`, a runner's reports and next claims in one transaction."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

from collections.abc import Callable

import corral
from corral import EventFilter, NewTask, RunOutcome, Settings, Store, Task, TaskStatus, Worker
from corral.model.exchange import Action, ClaimAsk, Held, Report, RunStart
from corral.usecases import claims

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]
Names = Callable[..., list[str]]


def open_run(task: Task, token: int, run_id: str) -> RunStart:
    """Every run of these tests records the same command."""
    return RunStart(command=("handler",), cwd="/work")


def take(store: Store, worker_id: str, settings: Settings, limit: int) -> tuple[Held, ...]:
    """Claim up to `limit` tasks for `worker_id` in one exchange."""
    ask = ClaimAsk(limit=limit, run=RunStart(command=("handler",), cwd="/work"))
    got = claims.exchange(store, worker_id, ask=ask, open_run=open_run, settings=settings)
    return got.held


def done(held: Held, result: object = None) -> Report:
    """A successful report for `held`."""
    return Report.of(held, Action.COMPLETE, RunOutcome.DONE, result=result)


def test_a_batch_claim_takes_tasks_in_claim_order_each_with_its_own_claim_and_run(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names
) -> None:
    """k tasks in one transaction: distinct tokens, open runs, and claim order kept."""
    low, high, mid = add("low"), add("high", priority=9), add("mid", priority=5)
    add("left behind")
    w = worker(max_concurrent=3)
    held = take(store, w.id, settings, limit=3)
    assert [high.id, mid.id, low.id] == [h.task.id for h in held]
    assert 3 == len({h.token for h in held})
    for h in held:
        task = store.tasks.get_task(h.task.id)
        assert (TaskStatus.RUNNING, h.token, w.id) == (task.status, task.token, task.worker_id)
        run = store.runs.get_run(h.run_id)
        assert (h.token, None, ("handler",)) == (run.token, run.outcome, run.command)
        assert ["task.created", "task.claimed", "run.started"] == events(task_id=h.task.id)
    assert 3 == store.workers.get_worker(w.id).active


def test_a_batch_claim_never_exceeds_the_workers_max_concurrent(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A worker declared for 2 at once gets 2, however many it asks for."""
    for n in range(5):
        add(f"t{n}")
    w = worker(max_concurrent=2)
    assert 2 == len(take(store, w.id, settings, limit=10))
    assert () == take(store, w.id, settings, limit=10)


def test_reports_apply_together_and_the_next_claim_rides_in_the_same_transaction(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names
) -> None:
    """Completions finish their runs, count for the worker, and a new claim follows."""
    first, second, third = add("1"), add("2"), add("3")
    w = worker(max_concurrent=2)
    held = take(store, w.id, settings, limit=2)
    ask = ClaimAsk(limit=2, run=RunStart(command=("handler",), cwd="/work"))
    got = claims.exchange(
        store,
        w.id,
        reports=[done(held[0], {"n": 1}), done(held[1], "two")],
        ask=ask,
        open_run=open_run,
        settings=settings,
    )
    assert ((), [third.id]) == (got.stale, [h.task.id for h in got.held])
    assert ({"n": 1}, "two") == (
        store.tasks.get_task(first.id).result,
        store.tasks.get_task(second.id).result,
    )
    for h in held:
        assert TaskStatus.DONE == store.tasks.get_task(h.task.id).status
        assert RunOutcome.DONE == store.runs.get_run(h.run_id).outcome
        assert ["task.completed", "run.finished"] == events(task_id=h.task.id)[-2:]
    assert (2, 1) == (
        store.workers.get_worker(w.id).completed_total,
        store.workers.get_worker(w.id).active,
    )


def test_a_batch_completes_each_task_into_review_or_done_as_it_requires(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """In one batch, the tasks that require review go to in_review, unfinished, and the
    others to done, finished: with and without a result (complete_task, complete_tasks)."""
    plain, reviewed, plain_result, reviewed_result = (
        add("plain"),
        add("reviewed", requires_review=True),
        add("plain, a result"),
        add("reviewed, a result", requires_review=True),
    )
    w = worker(max_concurrent=4)
    held = {h.task.id: h for h in take(store, w.id, settings, limit=4)}
    reports = [done(held[plain.id]), done(held[reviewed.id])]
    reports += [done(held[plain_result.id], 1), done(held[reviewed_result.id], 2)]
    claims.exchange(store, w.id, reports=reports, settings=settings)
    got = {
        t.id: store.tasks.get_task(t.id) for t in (plain, reviewed, plain_result, reviewed_result)
    }
    assert {
        plain.id: (TaskStatus.DONE, True),
        reviewed.id: (TaskStatus.IN_REVIEW, False),
        plain_result.id: (TaskStatus.DONE, True),
        reviewed_result.id: (TaskStatus.IN_REVIEW, False),
    } == {task_id: (t.status, t.finished_at is not None) for task_id, t in got.items()}


def test_a_report_under_a_token_done_elsewhere_is_stale_and_changes_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A fenced `done` from elsewhere wins: the runner's later report of that task is refused,
    and its run ends as what was reported under its token."""
    task = add()
    w = worker()
    (held,) = take(store, w.id, settings, limit=1)
    corral.complete(store, task.id, token=held.token, result="agent")
    got = claims.exchange(store, w.id, reports=[done(held, "runner")], settings=settings)
    assert [held.token] == [r.token for r in got.stale]
    assert {held.run_id: "done"} == got.settled  # as the agent reported under its token
    run = store.runs.get_run(held.run_id)
    assert ("agent", RunOutcome.DONE) == (store.tasks.get_task(task.id).result, run.outcome)
    completed = store.events.list_events(EventFilter(task_id=task.id, limit=50))
    assert 1 == sum(e.name == "task.completed" for e in completed)


def test_failures_deferrals_and_releases_in_one_batch(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Each outcome does what its single operation does; the attempt counts only on failure."""
    tasks = [add(n, max_attempts=3) for n in ("fails", "defers", "released")]
    w = worker(max_concurrent=3)
    failed, deferred, released = take(store, w.id, settings, limit=3)
    reports = [
        Report.of(failed, Action.FAIL, RunOutcome.FAILED, error="boom"),
        Report.of(deferred, Action.DEFER, RunOutcome.DEFERRED, delay_s=60.0),
        Report.of(released, Action.RELEASE, RunOutcome.SHUTDOWN),
    ]
    claims.exchange(store, w.id, reports=reports, settings=settings)
    after = [store.tasks.get_task(t.id) for t in tasks]
    assert [TaskStatus.READY] * 3 == [t.status for t in after]
    assert [1, 0, 0] == [t.attempts for t in after]
    assert "boom" == after[0].last_error
    assert after[1].run_after > store.now()
    outcomes = [store.runs.get_run(h.run_id).outcome for h in (failed, deferred, released)]
    assert [RunOutcome.FAILED, RunOutcome.DEFERRED, RunOutcome.SHUTDOWN] == outcomes
    assert (0, 1) == (
        store.workers.get_worker(w.id).active,
        store.workers.get_worker(w.id).failed_total,
    )


def test_a_draining_worker_still_reports_but_claims_nothing(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """Refusing the claim part does not roll back the reports sent with it."""
    task = add()
    add("next")
    w = worker(max_concurrent=2)
    (held,) = take(store, w.id, settings, limit=1)
    corral.drain(store, w.id)
    ask = ClaimAsk(limit=1, run=RunStart(command=("handler",), cwd="/work"))
    got = claims.exchange(
        store, w.id, reports=[done(held)], ask=ask, open_run=open_run, settings=settings
    )
    assert ((), True) == (got.held, "draining" in (got.refused or ""))
    assert TaskStatus.DONE == store.tasks.get_task(task.id).status


def test_completing_the_last_dependency_in_a_batch_unblocks_the_dependent(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names
) -> None:
    """Dependents of tasks completed together are unblocked, naming what they waited on."""
    a, b = add("a"), add("b")
    child = corral.enqueue(
        store, NewTask(title="child", depends_on=(a.id, b.id)), settings=settings
    )
    w = worker(max_concurrent=2)
    held = take(store, w.id, settings, limit=2)
    claims.exchange(store, w.id, reports=[done(h) for h in held], settings=settings)
    assert TaskStatus.READY == store.tasks.get_task(child.id).status
    unblocked = store.events.list_events(EventFilter(task_id=child.id, limit=10))[-1]
    assert ("task.unblocked", f"{min(a.id, b.id)} done") == (unblocked.name, unblocked.reason)


def test_a_batch_unblocks_the_dependents_of_the_tasks_that_have_some(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Names
) -> None:
    """Completed beside a task nothing depends on, a dependency still unblocks its dependent."""
    lone, parent = add("lone", priority=9), add("parent")
    child = corral.enqueue(
        store, NewTask(title="child", depends_on=(parent.id,)), settings=settings
    )
    w = worker(max_concurrent=2)
    held = take(store, w.id, settings, limit=2)
    assert [lone.id, parent.id] == [h.task.id for h in held]
    claims.exchange(store, w.id, reports=[done(h) for h in held], settings=settings)
    assert TaskStatus.READY == store.tasks.get_task(child.id).status
    assert ["task.created", "task.unblocked"] == events(task_id=child.id)


def test_a_claimed_task_comes_with_its_dependencies(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """The held task is the task as `get_task` shows it, dependencies included."""
    first = add("first")
    w = worker(max_concurrent=2)
    (held,) = take(store, w.id, settings, limit=1)
    claims.exchange(store, w.id, reports=[done(held)], settings=settings)
    child = corral.enqueue(store, NewTask(title="child", depends_on=(first.id,)), settings=settings)
    (again,) = take(store, w.id, settings, limit=2)
    assert (child.id, (first.id,)) == (again.task.id, again.task.depends_on)
    assert store.tasks.get_task(child.id) == again.task


def test_a_run_records_its_base_and_final_commit(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """What a worktree runner knows of a run's commits is kept on its record."""
    add()
    w = worker()

    def in_worktree(task: Task, token: int, run_id: str) -> RunStart:
        return RunStart(command=("agent",), cwd="/wt/t", base_commit="abc123")

    ask = ClaimAsk(limit=1, run=RunStart(command=("agent",), cwd="/wt"))
    (held,) = claims.exchange(store, w.id, ask=ask, open_run=in_worktree, settings=settings).held
    report = Report.of(held, Action.COMPLETE, RunOutcome.DONE, final_commit="def456")
    claims.exchange(store, w.id, reports=[report], settings=settings)
    run = store.runs.get_run(held.run_id)
    assert ("abc123", "def456", "/wt/t") == (run.base_commit, run.final_commit, run.cwd)
