"""Conformance: namespaces on one store, and one live worker per (namespace, host, pid).

Two handles on one store, in namespaces `default` and `team-b`: over HTTP, each through
its own token of its namespace (the server acts in the token's namespace alone).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import STORE_DIALECTS, store_url

import corral
from corral import (
    CorralError,
    EventFilter,
    FakeClock,
    InvalidInput,
    LimitReached,
    NewTask,
    NewWorker,
    Settings,
    Store,
    TaskFilter,
    WorkerStatus,
)
from corral.foundation.errors import WorkerConflict
from corral.model.workers import WorkerFilter
from corral.usecases.namespaces import list_namespaces
from corral.usecases.reconcile import recover_worker

B = "team-b"
Pair = tuple[Store, Store]

NOT_OVER_HTTP = {
    "test_namespace_list_counts_tasks_by_status_and_live_workers_of_each": (
        "every namespace's counts are read beside the database (a token acts in one)"
    ),
    "test_a_task_pages_dependents_are_of_its_namespace_only": (
        "the dashboard's task page reads beside the database (a request never serves it)"
    ),
}


@pytest.fixture(params=[*STORE_DIALECTS, "http"])
def pair(request: pytest.FixtureRequest, tmp_path: Path, clock: FakeClock) -> Iterator[Pair]:
    """A store in the default namespace and one in `team-b`, on one database."""
    if request.param == "http":
        from tests.served import Served

        from corral.usecases.api_tokens import create_token

        served = Served(corral.open_store(str(tmp_path / "corral.db"), clock=clock))
        remotes = []
        for namespace in ("default", B):
            local = served.local.in_namespace(namespace)
            _, secret = create_token(local, role="operator", name=f"op-{secrets.token_hex(3)}")
            remotes.append(corral.open_store(served.url, token=secret, namespace=namespace))
        yield remotes[0], remotes[1]
        for remote in remotes:
            remote.close()
        served.stop()
        served.local.close()
        return
    opened = corral.open_store(store_url(request.param, request, tmp_path), clock=clock)
    yield opened, opened.in_namespace(B)
    opened.close()


def _add(store: Store, settings: Settings, title: str, **fields: object) -> corral.Task:
    return corral.enqueue(store, NewTask(title=title, **fields), settings=settings)  # type: ignore[arg-type]


def _titles(store: Store) -> list[str]:
    return [t.title for t in store.tasks.list_tasks(TaskFilter(limit=100))]


def test_each_namespace_lists_and_counts_only_its_own_tasks(pair: Pair, settings: Settings) -> None:
    """Tasks added in two namespaces are listed and counted apart."""
    a, b = pair
    _add(a, settings, "a1")
    _add(a, settings, "a2")
    _add(b, settings, "b1")
    assert (["a1", "a2"], ["b1"]) == (_titles(a), _titles(b))
    assert ({"ready": 2}, {"ready": 1}) == (a.tasks.task_counts(), b.tasks.task_counts())
    ready = b.tasks.ready_tasks(queue=None, kinds=(), limit=10)
    assert ["b1"] == [t.title for t in ready]


def test_a_worker_never_claims_another_namespaces_task(pair: Pair, settings: Settings) -> None:
    """A worker of one namespace claims its own tasks only, by claim order or by id."""
    a, b = pair
    theirs = _add(b, settings, "b1", priority=9)
    ours = _add(a, settings, "a1")
    worker = corral.register(a, NewWorker(name="w", max_concurrent=3), settings=settings).worker
    corral.heartbeat(a, worker.id, settings=settings)
    claimed = corral.claim_next(a, worker.id, settings=settings)
    assert claimed is not None
    assert ours.id == claimed.task_id
    assert corral.claim_next(a, worker.id, settings=settings) is None
    with pytest.raises(CorralError):
        corral.claim(a, theirs.id, worker.id, settings=settings)
    assert [theirs.id] == [
        t.id for t in b.tasks.list_tasks(TaskFilter(statuses=("ready",), limit=9))
    ]


def test_one_queue_name_has_its_own_limits_in_each_namespace(
    pair: Pair, settings: Settings
) -> None:
    """Queue `q` may hold one waiting task in one namespace and two in the other."""
    a, b = pair
    corral.set_queue_limits(a, "q", {"max_ready": 1})
    corral.set_queue_limits(b, "q", {"max_ready": 2})
    _add(a, settings, "a1", queue="q")
    with pytest.raises(LimitReached):
        _add(a, settings, "a2", queue="q")
    _add(b, settings, "b1", queue="q")
    _add(b, settings, "b2", queue="q")
    limits = [{s.queue: (s.limits.max_ready, s.ready) for s in corral.queue_stats(x)} for x in pair]
    assert [{"q": (1, 1)}, {"q": (2, 2)}] == limits


def test_a_dependency_or_parent_in_another_namespace_is_refused(
    pair: Pair, settings: Settings
) -> None:
    """A task may not wait on, or be the child of, a task of another namespace."""
    a, b = pair
    theirs = _add(b, settings, "b1")
    with pytest.raises(InvalidInput, match="depends_on: expected ids of existing tasks in this"):
        _add(a, settings, "a1", depends_on=(theirs.id,))
    with pytest.raises(InvalidInput, match="parent: expected the id of an existing task in this"):
        _add(a, settings, "a1", parent_id=theirs.id)
    assert [] == _titles(a)


def test_a_second_live_worker_with_one_host_and_pid_is_refused_until_the_first_is_gone(
    pair: Pair, settings: Settings
) -> None:
    """Same namespace, host and pid: refused while the first lives, accepted once it is
    offline or dead; another namespace may have its own."""
    a, b = pair

    def spec(name: str) -> NewWorker:
        return NewWorker(name=name, hostname="box", pid=4100)

    first = corral.register(a, spec("first"), settings=settings).worker
    with pytest.raises(WorkerConflict, match=f"worker {first.id} \\(first\\) is live"):
        corral.register(a, spec("second"), settings=settings)
    assert [first.id] == [w.id for w in a.workers.list_workers()]
    corral.register(b, spec("elsewhere"), settings=settings)
    corral.deregister(a, first.id)
    second = corral.register(a, spec("second"), settings=settings).worker
    recover_worker(a, second.id, reason="its process is gone", settings=settings)
    assert WorkerStatus.DEAD == a.workers.get_worker(second.id).status
    third = corral.register(a, spec("third"), settings=settings).worker
    assert WorkerStatus.STARTING == third.status


def test_namespace_list_counts_tasks_by_status_and_live_workers_of_each(
    pair: Pair, settings: Settings
) -> None:
    """`namespace list` reads every namespace: tasks by status and live workers."""
    a, b = pair
    _add(a, settings, "a1")
    cancelled = _add(b, settings, "b1")
    _add(b, settings, "b2")
    corral.cancel(b, cancelled.id)
    corral.register(b, NewWorker(name="w"), settings=settings)
    gone = corral.register(b, NewWorker(name="gone"), settings=settings).worker
    corral.deregister(b, gone.id)
    found = {n.name: n.to_dict() for n in list_namespaces(a.in_namespace("empty"))}
    assert {
        "default": {"name": "default", "tasks": {"ready": 1}, "tasks_total": 1, "workers_live": 0},
        "empty": {"name": "empty", "tasks": {}, "tasks_total": 0, "workers_live": 0},
        B: {
            "name": B,
            "tasks": {"cancelled": 1, "ready": 1},
            "tasks_total": 2,
            "workers_live": 1,
        },
    } == found


def test_the_event_log_is_read_by_namespace(pair: Pair, settings: Settings) -> None:
    """Each namespace's events are its tasks' and workers'; the other's are not listed
    (the store's own, such as token.created over HTTP, are the default namespace's)."""
    a, b = pair
    ours = _add(a, settings, "a1")
    theirs = _add(b, settings, "b1")
    worker = corral.register(b, NewWorker(name="w"), settings=settings).worker

    def listed(store: Store) -> list[tuple[str, str | None]]:
        found = store.events.list_events(EventFilter())
        return [(e.name, e.task_id or e.worker_id) for e in found if e.task_id or e.worker_id]

    assert [("task.created", ours.id)] == listed(a)
    assert {("task.created", theirs.id), ("worker.registered", worker.id)} == set(listed(b))


def test_worker_pages_runs_and_payload_lookups_keep_to_their_namespace(
    pair: Pair, settings: Settings
) -> None:
    """The listings that page and count (workers, runs), a child listing and the seed 001
    session lookup by payload each see their own namespace's rows only."""
    a, b = pair
    for store, name in ((a, "wa"), (b, "wb")):
        worker = corral.register(store, NewWorker(name=name), settings=settings).worker
        corral.heartbeat(store, worker.id, settings=settings)
        _add(store, settings, f"{name} task", kind="session", payload={"label": "same"})
        held = corral.claim_next(store, worker.id, settings=settings)
        assert held is not None
        store.runs.start_run(
            corral.NewRun(task_id=held.task_id, worker_id=worker.id, token=held.token, attempt=1,
                          prompt=None, command=("true",), cwd="/", transcript_path=None,
                          stderr_path=None)
        )  # fmt: skip
    for store, name in ((a, "wa"), (b, "wb")):
        assert [name] == [w.name for w in store.workers.find_workers(WorkerFilter())]
        assert 1 == store.workers.count_workers(WorkerFilter())
        assert 1 == len(store.runs.list_runs(limit=10)) == store.runs.count_runs()
        found = store.tasks.tasks_with_payload("session", "label", "same", 10)
        assert [f"{name} task"] == [t.title for t in found]


def test_a_task_pages_dependents_are_of_its_namespace_only(pair: Pair, settings: Settings) -> None:
    """The task page's "blocking" list: the tasks of the handle's namespace that wait on
    the id; another namespace's handle, given the same id, lists none of them."""
    a, b = pair
    first = _add(a, settings, "first")
    _add(a, settings, "after", depends_on=(first.id,))
    assert ["after"] == [title for _, title, _ in a.task_pages.task_dependents(first.id)]
    assert [] == b.task_pages.task_dependents(first.id)
