"""Conformance: subtasks. A parent waits for its children (or they for it, with
`parent_runs_first`), `why` names them, and cancelling a parent cancels what is below it."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

import corral
from corral import (
    InvalidInput,
    Refused,
    Settings,
    StaleToken,
    Store,
    Task,
    TaskFilter,
    TaskStatus,
    Worker,
)
from corral.model.subtasks import MAX_DEPTH

Add = Callable[..., Task]
MakeWorker = Callable[..., Worker]


def _status(store: Store, task_id: str) -> TaskStatus:
    return store.tasks.get_task(task_id).status


def _codes(store: Store, task_id: str, settings: Settings) -> list[str]:
    return [r.code for r in corral.why(store, task_id, settings=settings).reasons]


def test_a_parent_is_blocked_until_its_children_are_done(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Callable[..., list[str]]
) -> None:
    """Adding a child blocks a ready parent; it is claimable only once every child is done."""
    parent = add("parent")
    first, second = add("one", parent_id=parent.id), add("two", parent_id=parent.id)
    w = worker()
    assert TaskStatus.BLOCKED == _status(store, parent.id)
    assert ["waiting_for_child", "waiting_for_child"] == _codes(store, parent.id, settings)
    claim = corral.claim_next(store, w.id, settings=settings)
    assert claim is not None and first.id == claim.task_id
    corral.complete(store, first.id, token=claim.token)
    assert TaskStatus.BLOCKED == _status(store, parent.id)
    claim = corral.claim_next(store, w.id, settings=settings)
    assert claim is not None and second.id == claim.task_id
    corral.complete(store, second.id, token=claim.token)
    assert TaskStatus.READY == _status(store, parent.id)
    assert ["task.created", "task.blocked", "task.unblocked"] == events(task_id=parent.id)


def test_a_failed_child_holds_its_parent_until_retried_or_cancelled(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A child failed for good keeps the parent blocked and `why` says so; cancelling the
    child lets the parent go, and a retried child is waited for again."""
    parent = add("parent")
    failing = add("fails", parent_id=parent.id, max_attempts=1)
    w = worker()
    claim = corral.claim(store, failing.id, w.id, settings=settings)
    corral.fail(store, failing.id, error="boom", token=claim.token, settings=settings)
    assert ["child_failed"] == _codes(store, parent.id, settings)
    corral.retry(store, failing.id)
    assert ["waiting_for_child"] == _codes(store, parent.id, settings)
    corral.cancel(store, failing.id)
    assert TaskStatus.READY == _status(store, parent.id)


def test_parent_runs_first_makes_the_child_wait(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """With parent_runs_first a running parent takes children, which wait until it is done."""
    parent = add("planner")
    claim = corral.claim(store, parent.id, worker().id, settings=settings)
    with pytest.raises(InvalidInput, match="parent: expected a task that has not started"):
        add("waited for", parent_id=parent.id)
    child = add("planned", parent_id=parent.id, parent_runs_first=True)
    assert TaskStatus.BLOCKED == child.status
    assert (parent.id,) == child.depends_on
    corral.complete(store, parent.id, token=claim.token)
    assert TaskStatus.READY == _status(store, child.id)


def test_a_subtask_under_the_parents_claim_token_needs_that_claim(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """enqueue with parent_token (MCP's add_subtask): under the parent's active claim the
    child is added, by `token:N`; under a token whose claim ended it is refused as stale,
    in the same transaction as the insert, and nothing is added."""
    parent = add("agent's task")
    w = worker()
    claim = corral.claim(store, parent.id, w.id, settings=settings)
    spec = corral.NewTask(title="found on the way", parent_id=parent.id, parent_runs_first=True)
    child = corral.enqueue(store, spec, settings=settings, parent_token=claim.token)
    assert (parent.id, TaskStatus.BLOCKED) == (child.parent_id, child.status)
    created = store.events.list_events(corral.EventFilter(task_id=child.id, limit=5))
    assert [f"token:{claim.token}"] == [e.actor for e in created]
    corral.release(store, parent.id, worker_id=w.id, token=claim.token, attempt=False)
    with pytest.raises(StaleToken, match=f"token {claim.token} is stale"):
        corral.enqueue(store, spec, settings=settings, parent_token=claim.token)
    assert [child.id] == [t.id for t in store.tasks.list_tasks(TaskFilter(parent_id=parent.id))]


def test_list_by_parent_returns_only_its_children(store: Store, add: Add) -> None:
    """list_tasks with a parent_id lists that parent's children in the order added."""
    parent, other = add("parent"), add("other")
    kids = [add(f"kid {n}", parent_id=parent.id).id for n in range(3)]
    add("not mine", parent_id=other.id)
    add("grandchild", parent_id=kids[0])
    assert kids == [t.id for t in store.tasks.list_tasks(TaskFilter(parent_id=parent.id))]


def test_cancelling_a_parent_cancels_its_unfinished_descendants(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Callable[..., list[str]]
) -> None:
    """The cascade reaches grandchildren, passes finished children by, and records an
    event per task it cancels."""
    parent = add("parent")
    done = add("done", parent_id=parent.id)
    child = add("child", parent_id=parent.id)
    grandchild = add("grandchild", parent_id=child.id)
    w = worker()
    corral.complete(store, done.id, token=corral.claim(store, done.id, w.id).token)
    corral.cancel(store, parent.id, reason="not needed")
    found = {t.id: t.status for t in store.tasks.list_tasks(TaskFilter())}
    assert TaskStatus.DONE == found[done.id]
    assert {TaskStatus.CANCELLED} == {found[parent.id], found[child.id], found[grandchild.id]}
    assert "task.cancelled" == events(task_id=grandchild.id)[-1]
    assert f"parent {parent.id} cancelled" == store.tasks.get_task(child.id).last_error


def test_a_claimed_child_cancelled_with_its_parent_is_fenced(
    store: Store, settings: Settings, add: Add, worker: MakeWorker
) -> None:
    """A child running when its parent is cancelled ends cancelled: its worker's token is
    stale, so its late `done` changes nothing and nothing completes twice."""
    parent = add("parent")
    child = add("child", parent_id=parent.id)
    claim = corral.claim(store, child.id, worker().id, settings=settings)
    corral.cancel(store, parent.id)
    with pytest.raises(StaleToken):
        corral.complete(store, child.id, token=claim.token)
    assert TaskStatus.CANCELLED == _status(store, child.id)
    assert TaskStatus.CANCELLED == _status(store, parent.id)


def test_a_parent_must_exist_and_be_unfinished(store: Store, add: Add) -> None:
    """A missing or finished parent is refused naming `parent`, and nothing is written."""
    gone = add("gone")
    corral.cancel(store, gone.id)
    before = len(store.tasks.list_tasks(TaskFilter()))
    with pytest.raises(InvalidInput, match=r"^parent: expected the id of an existing task"):
        add("orphan", parent_id="t-nosuchtask")
    with pytest.raises(InvalidInput, match=r"^parent: expected an unfinished task"):
        add("late", parent_id=gone.id)
    assert before == len(store.tasks.list_tasks(TaskFilter()))


def test_a_child_cannot_depend_on_what_waits_for_it(store: Store, add: Add) -> None:
    """A circle through the dependencies is refused: the parent itself, or a task that
    depends on the parent (or on an ancestor that waits for the parent)."""
    top = add("top")
    parent = add("parent", parent_id=top.id)
    after_top = add("after top", depends_on=(top.id,))
    with pytest.raises(InvalidInput, match=r"^depends_on: expected not the parent"):
        add("self", parent_id=parent.id, depends_on=(parent.id,))
    with pytest.raises(InvalidInput, match=r"^depends_on: expected tasks that do not wait"):
        add("circle", parent_id=parent.id, depends_on=(after_top.id,))


def test_depth_is_limited(store: Store, add: Add) -> None:
    """A task at most MAX_DEPTH - 1 levels deep takes children."""
    task = add("root")
    for level in range(MAX_DEPTH):
        task = add(f"level {level + 1}", parent_id=task.id)
    with pytest.raises(InvalidInput, match=r"^parent: expected a task at most"):
        add("too deep", parent_id=task.id)


def _race(store: Store, settings: Settings, worker_id: str, parent: Task, child: Task) -> None:
    """The parent's cancel in one thread; the child's claim and done in another, at once."""
    start = threading.Barrier(2)

    def work() -> None:
        start.wait()
        with contextlib.suppress(Refused):
            claim = corral.claim(store, child.id, worker_id, settings=settings)
            corral.complete(store, child.id, token=claim.token)

    def cancel() -> None:
        start.wait()
        corral.cancel(store, parent.id)

    with ThreadPoolExecutor(2) as pool:
        for future in [pool.submit(work), pool.submit(cancel)]:
            future.result()


def test_a_parent_cancel_racing_its_child_claim_finishes_the_child_once(
    store: Store, settings: Settings, add: Add, worker: MakeWorker, events: Callable[..., list[str]]
) -> None:
    """A parent's cancel and a worker claiming and completing its child, at once: the child
    ends done or cancelled, never both, and a refused claim or a stale token is the only
    error the worker sees."""
    w = worker()
    for round_no in range(8):
        parent = add(f"parent {round_no}")
        child = add("child", parent_id=parent.id)
        _race(store, settings, w.id, parent, child)
        names = events(task_id=child.id)
        ends = {"task.completed", "task.cancelled"} & set(names)
        assert 1 == len(ends) == names.count(ends.pop())
        assert _status(store, child.id) in (TaskStatus.DONE, TaskStatus.CANCELLED)
        assert TaskStatus.CANCELLED == _status(store, parent.id)
