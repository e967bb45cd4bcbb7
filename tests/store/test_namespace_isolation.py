"""Conformance: a handle of one namespace finds nothing of another's by id or token.

Namespace B holds a record of each kind (a worker, a task claimed with a run, its artifact
and branch, a schedule, a message, an API token). From a handle of namespace A, every
served operation that takes an id or a fencing token (walked from `operations()`, so an
operation added tomorrow is walked too) is called twice: with B's ids, and with ids never
issued. Both calls must answer alike (the same result, or the same error with the same
message, ids aside), and B must be as it was. The few operations that take no id are
named, each with why.
"""

from __future__ import annotations

import inspect
import re
import secrets
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import pytest
from tests.conftest import run_under
from tests.served import SERVED_LOCAL

import corral
from corral import (
    EventFilter,
    FakeClock,
    NewRun,
    NewSchedule,
    NewTask,
    NewWorker,
    NotFound,
    Settings,
    Store,
    TaskFilter,
)
from corral.foundation.ids import RUN_PREFIX, TASK_PREFIX, WORKER_PREFIX, new_id
from corral.model.artifacts import Artifact
from corral.model.backoff import Retry
from corral.model.exchange import Action, ClaimAsk, Report, RunStart
from corral.model.messages import NewMessage
from corral.model.recovery import CloseClaim, ExpireClaim, MarkWorker
from corral.model.schedules import FirePlan
from corral.model.states import WorkerStatus
from corral.store.operations import operations
from corral.usecases.api_tokens import create_token

B = "team-b"

# Served operations that take no id or token of a namespaced record, and why.
NO_ID = {
    "now": "the store's clock",
    "schema_version": "the store's version",
    "tasks.tasks_with_payload": "a search within the handle's namespace",
    "tasks.task_counts": "counts of the handle's namespace",
    "tasks.next_run_after": "an instant of the handle's namespace",
    "tasks.task_gauges": "counts of the handle's namespace",
    "tasks.ready_tasks": "a listing; its worker is a record the caller holds",
    "tasks.count_ready": "a count; its worker is a record the caller holds",
    "events.events_head": "the newest event's cursor",
    "day_caps.set_day_cap": "a queue's or an account's cap, by name, in the handle's namespace",
    "day_caps.day_caps": "a listing of the handle's namespace",
    "tallies.event_tallies": "sums from a cursor",
    "claims.running_tasks": "a listing (test_listings_show_nothing_of_another_namespace)",
    "workers.register_worker": "makes a new worker",
    "workers.slot_worker": "finds a worker by name in the handle's namespace, else makes one "
    "(tests/server/test_board_routes.py: another namespace registers its slot there)",
    "workers.find_workers": "a listing by filters of no id",
    "workers.count_workers": "a count by filters of no id",
    "workers.list_workers": "a listing",
    "recovery.reconcile_snapshot": "a listing (test_reconcile_reads_its_namespace...)",
    "runs.waiting_runs": "a listing (test_listings_show_nothing_of_another_namespace)",
    "queues.set_queue_limits": "a queue is a name within the namespace",
    "queues.queue_stats": "figures of the handle's namespace",
    "reviews.branched_tasks": "a listing (test_listings_show_nothing_of_another_namespace)",
    "reviews.work_ends": "a listing of the handle's namespace",
    "review_staleness.note_stale_reviews": "a pass over the handle's namespace",
    "schedules.list_schedules": "a listing",
    "schedules.due_schedules": "a listing (test_listings_show_nothing_of_another_namespace)",
    "api_tokens.list_tokens": "a listing",
    # Names the caller chooses are unique across the store (docs/operations.md).
    "schedules.add_schedule": "a schedule's id is a name unique across the store",
    "api_tokens.create_token": "a token's name is unique across the store",
}
# Served operations of what no namespace holds (docs/operations.md, Namespaces).
NOT_NAMESPACED = ("providers.", "orchestrators.")


@dataclass(frozen=True)
class Ids:
    """The ids an operation may be given: B's, or ones never issued."""

    task: str
    worker: str
    worker_name: str
    run: str
    token: int
    schedule: str
    message: int
    api_token: str
    next_fire_at: Any
    heartbeat_at: Any


def _delivery(ids: Ids) -> dict[str, Any]:
    """record_delivery's arguments, about B's task and worker."""
    return {
        "delivered": True,
        "notice": "task.failed",
        "event_id": 1,
        "channel": "url",
        "attempts": 1,
        "task_id": ids.task,
        "worker_id": ids.worker,
        "error": None,
        "actor": "notify",
    }


def _calls(ids: Ids, now: Any) -> dict[str, list[tuple[tuple[Any, ...], dict[str, Any]]]]:
    """The calls of the operations whose arguments are records holding ids, by name."""
    report = Report(task_id=ids.task, token=ids.token, action=Action.COMPLETE, actor="a")
    operator_report = Report(task_id=ids.task, token=None, action=Action.COMPLETE, actor="a")
    return {
        "tasks.enqueue": [
            ((NewTask(title="child", parent_id=ids.task),), _SETTINGS | {"actor": "a"}),
            ((NewTask(title="after", depends_on=(ids.task,)),), _SETTINGS | {"actor": "a"}),
        ],
        "tasks.list_tasks": [((TaskFilter(parent_id=ids.task),), {})],
        "tasks.count_tasks": [((TaskFilter(parent_id=ids.task),), {})],
        "events.list_events": [((EventFilter(task_id=ids.task),), {})],
        "events.count_events": [((EventFilter(task_id=ids.task),), {})],
        "events.events_page": [((EventFilter(task_id=ids.task), None), {})],
        "events.record_delivery": [((), _delivery(ids))],
        "claims.exchange": [
            ((ids.worker,), {"reports": [report]}),
            ((None,), {"reports": [operator_report], "return_tasks": True}),
            ((ids.worker,), {"ask": ClaimAsk(limit=1, task_id=ids.task, claims_only=True)}),
        ],
        "recovery.apply_recoveries": [
            (
                (
                    [
                        MarkWorker(
                            worker_id=ids.worker,
                            seen=WorkerStatus.BUSY,
                            seen_heartbeat_at=ids.heartbeat_at,
                            to=WorkerStatus.STALE,
                        ),
                    ],
                ),
                {},
            ),
            (([ExpireClaim(ids.token, ids.task, ids.worker, False, Retry(0.0))],), {}),
            (([CloseClaim(ids.token, ids.task, ids.worker)],), {}),
        ],
        "runs.start_run": [
            (
                (
                    NewRun(
                        task_id=ids.task,
                        worker_id=ids.worker,
                        token=ids.token,
                        attempt=1,
                        prompt=None,
                        command=("true",),
                        cwd="/",
                        transcript_path=None,
                        stderr_path=None,
                    ),
                ),
                {},
            )
        ],
        "runs.list_runs": [((), {"task_id": ids.task}), ((), {"worker_id": ids.worker})],
        "runs.count_runs": [((), {"task_id": ids.task}), ((), {"worker_id": ids.worker})],
        "runs.usage_by": [(("task",), {"task_id": ids.task})],
        "messages.send_message": [
            ((NewMessage(sender="a", recipient=ids.worker_name, type="note"),), {}),
            ((NewMessage(sender="a", recipient=ids.worker, type="note"),), {}),
        ],
        "messages.list_messages": [((), {"recipient": ids.worker_name})],
        "schedules.apply_fire_plans": [
            (
                (
                    [
                        FirePlan(
                            schedule_id=ids.schedule,
                            seen_next_fire_at=ids.next_fire_at,
                            fires=(now,),
                            missed=None,
                            next_fire_at=now + timedelta(days=1),
                        )
                    ],
                ),
                _SETTINGS | {"actor": "a"},
            )
        ],
    }


_SETTINGS = {"max_attempts": 3, "retry_base_s": 1.0}


def _by_name(ids: Ids, now: Any) -> dict[str, Any]:
    """Arguments by parameter name: the ids, and a plausible value for the rest."""
    return {
        "task_id": ids.task,
        "worker_id": ids.worker,
        "run_id": ids.run,
        "token": ids.token,
        "holder": ids.worker,
        "schedule_id": ids.schedule,
        "message_id": ids.message,
        "task_ids": [ids.task],
        "actor": "a",
        "reason": "r",
        "note": "n",
        "text": None,
        "priority": 7,
        "action": "complete",
        "full": None,
        "lease_s": 60.0,
        "max_renewals": 10,
        "figures": corral.BeatFigures(),
        "start": RunStart(command=("true",), cwd="/", site="here"),
        "transcript_path": "/runs/t",
        "stderr_path": "/runs/e",
        "limit": 10,
        "branch": "corral/x",
        "base_ref": "main",
        "worktree_path": "/trees/w",
        "pr_url": "https://example.invalid/pull/x",
        "commit": None,
        "approved_commit": None,
        "merged_commit": "c0ffee",
        "files": ("f",),
        "found": ("tests/test_x.py: deleted",),
        "backups": (),
        "branch_deleted": False,
        "artifacts": [Artifact(path="x", size_bytes=1, sha256="0" * 64)],
        "fire_times": [now],
        "usage": {"input_tokens": 1},
        "data": {},
        "skip_to": None,
        **_SETTINGS,
    }


_OUTCOMES = {"runs.finish_run": "done", "reviews.record_outcome": "kept"}
_NAMES = {"api_tokens.revoke_token": "api_token"}


def _walk(ids: Ids, now: Any) -> Iterator[tuple[str, tuple[Any, ...], dict[str, Any]]]:
    """(operation, args, kwargs) of every served call that takes an id or a token."""
    records = _calls(ids, now)
    values = _by_name(ids, now)
    for name, op in operations().items():
        if name in NO_ID or name.startswith(NOT_NAMESPACED):
            continue
        if name in records:
            for args, kwargs in records[name]:
                yield name, args, kwargs
            continue
        kwargs = {}
        for parameter in list(inspect.signature(op.function).parameters.values())[1:]:
            if parameter.name == "outcome":
                kwargs["outcome"] = _OUTCOMES[name]
            elif parameter.name == "name":
                kwargs["name"] = getattr(ids, _NAMES[name])
            elif parameter.name in values:
                kwargs[parameter.name] = values[parameter.name]
            else:
                assert parameter.default is not inspect.Parameter.empty, (
                    f"{name}: no value for {parameter.name!r}: add it here, or the operation "
                    "to NO_ID with why"
                )
        yield name, (), kwargs


def _answer(store: Store, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """What the call answers: its result, or its error's type and message."""
    repository, _, method = name.rpartition(".")
    target = getattr(store, repository) if repository else store
    try:
        return getattr(target, method)(*args, **kwargs)
    except corral.CorralError as exc:
        return (type(exc).__name__, exc.message)


def _unlike(answer: Any, ids: Ids) -> str:
    """The answer's text with the ids in it named by kind, so two calls compare (a
    record's numbers only where they are the token given: its others are its own)."""
    # A page's cursor carries the database's transaction horizon, which other tests' writes
    # move on a shared server between the two calls: it is no id of B's.
    text = re.sub(r"\bxid=\d+", "xid=<xid>", repr(answer))
    for kind in ("task", "worker", "worker_name", "run", "schedule", "api_token"):
        text = text.replace(str(getattr(ids, kind)), f"<{kind}>")
    if not isinstance(answer, tuple) or not text.startswith("('"):
        return re.sub(rf"\btoken={ids.token}\b", "token=<token>", text)
    return re.sub(rf"\b{ids.token}\b", "<token>", re.sub(rf"\b{ids.message}\b", "<msg>", text))


@pytest.fixture
def other(store: Store, request: pytest.FixtureRequest) -> Iterator[Store]:
    """A handle of namespace B on the `store` fixture's database (over HTTP, through a
    token of B's)."""
    local = request.node.stash.get(SERVED_LOCAL, None)
    if local is None:
        yield store.in_namespace(B)
        return
    _, secret = create_token(local.in_namespace(B), role="operator", name="b-op")
    remote = corral.open_store(store.url, token=secret, namespace=B)
    yield remote
    remote.close()


@pytest.fixture
def b_ids(
    other: Store, settings: Settings, clock: FakeClock, request: pytest.FixtureRequest
) -> Ids:
    """B's records, one of each kind, and their ids (B's API token made beside the
    database over HTTP: only an admin token makes tokens there)."""
    beat = corral.register(
        other, NewWorker(name="b-worker", hostname="b-host", pid=77), settings=settings
    )
    worker_id = beat.worker.id
    corral.heartbeat(other, worker_id, settings=settings)
    task = corral.enqueue(other, NewTask(title="b task"), settings=settings)
    claim = corral.claim(other, task.id, worker_id, settings=settings)
    run = other.runs.start_run(run_under(claim, transcript_path=None, stderr_path=None))
    other.artifacts.record_artifacts(run.id, [Artifact(path="kept", size_bytes=1)])
    other.reviews.record_branch(
        task.id,
        token=claim.token,
        branch="corral/b",
        base_ref="main",
        worktree_path="/w",
        actor="b",
    )
    schedule = corral.add_schedule(
        other,
        NewSchedule(
            id=f"b-{secrets.token_hex(3)}", cron="0 0 * * * *", template={"title": "fired"}
        ),
    )
    message = other.messages.send_message(NewMessage(sender="b", recipient="b-worker", type="hi"))
    token_name = f"b-{secrets.token_hex(3)}"
    local = request.node.stash.get(SERVED_LOCAL, None)
    create_token(other if local is None else local.in_namespace(B), role="viewer", name=token_name)
    worker = other.workers.get_worker(worker_id)
    return Ids(
        task=task.id,
        worker=worker_id,
        worker_name="b-worker",
        run=run.id,
        token=claim.token,
        schedule=schedule.id,
        message=message.id,
        api_token=token_name,
        next_fire_at=schedule.next_fire_at,
        heartbeat_at=worker.last_heartbeat_at,
    )


def _never_issued(b: Ids) -> Ids:
    """Ids of the same shapes that no namespace holds."""
    return Ids(
        task=new_id(TASK_PREFIX),
        worker=new_id(WORKER_PREFIX),
        worker_name="nobody",
        run=new_id(RUN_PREFIX),
        token=b.token + 1000,
        schedule=f"none-{secrets.token_hex(3)}",
        message=b.message + 1000,
        api_token=f"none-{secrets.token_hex(3)}",
        next_fire_at=b.next_fire_at,
        heartbeat_at=b.heartbeat_at,
    )


def _b_as_it_is(other: Store, b: Ids) -> list[Any]:
    """Everything of B's that the walk could change."""
    return [
        other.tasks.get_task(b.task),
        other.workers.get_worker(b.worker),
        other.runs.get_run(b.run),
        other.artifacts.run_artifacts(b.run),
        other.reviews.get_review(b.task),
        other.claims.active_claim(b.task),
        other.schedules.get_schedule(b.schedule),
        other.schedules.schedule_fires(b.schedule, 10),
        other.messages.list_messages(),
        other.api_tokens.list_tokens(),
        other.events.list_events(EventFilter(limit=1000)),
    ]


@pytest.fixture
def b_reader(other: Store, request: pytest.FixtureRequest) -> Store:
    """Where B's records are read as they are: B's handle, or over HTTP the database's own
    in B (B's tokens are listed by an admin token only there)."""
    local = request.node.stash.get(SERVED_LOCAL, None)
    return other if local is None else local.in_namespace(B)


def test_another_namespaces_ids_answer_as_ids_never_issued(
    store: Store, b_reader: Store, b_ids: Ids, clock: FakeClock
) -> None:
    """Every served operation taking an id or a token, given B's from A, answers exactly as
    for an id never issued, and changes nothing of B's."""
    before = _b_as_it_is(b_reader, b_ids)
    unknown = _never_issued(b_ids)
    now = clock.now()
    foreign_calls = list(_walk(b_ids, now))
    unknown_calls = list(_walk(unknown, now))
    walked = set()
    for (name, args, kwargs), (_, u_args, u_kwargs) in zip(
        foreign_calls, unknown_calls, strict=True
    ):
        walked.add(name)
        foreign = _unlike(_answer(store, name, args, kwargs), b_ids)
        never = _unlike(_answer(store, name, u_args, u_kwargs), unknown)
        assert never == foreign, name
    assert before == _b_as_it_is(b_reader, b_ids)
    assert {"tasks.get_task", "claims.claim_by_token", "claims.exchange"} <= walked


def test_a_lookup_by_id_of_another_namespace_is_not_found(store: Store, b_ids: Ids) -> None:
    """A's handle reads B's task, worker, run and schedule as unknown, and B's fencing
    token names no claim."""
    for read, wanted in (
        (store.tasks.get_task, b_ids.task),
        (store.workers.get_worker, b_ids.worker),
        (store.runs.get_run, b_ids.run),
        (store.schedules.get_schedule, b_ids.schedule),
    ):
        with pytest.raises(NotFound):
            read(wanted)
    assert None is store.claims.claim_by_token(b_ids.token)


def test_listings_show_nothing_of_another_namespace(store: Store, b_ids: Ids) -> None:
    """A's running tasks, waiting runs, branches and due schedules leave B's out."""
    assert [] == store.claims.running_tasks(10)
    assert [] == store.runs.waiting_runs()
    assert [] == store.reviews.branched_tasks()
    assert () == store.recovery.reconcile_snapshot().claims


NOT_OVER_HTTP = {
    "test_the_maintenance_handle_reads_every_namespace": (
        "the maintenance handle lives beside the database (a request never has it)"
    ),
}


def test_the_maintenance_handle_reads_every_namespace(store: Store, b_ids: Ids) -> None:
    """The reconciler's handle sees B's claim and task from a store opened for A."""
    every = store.for_maintenance()
    assert b_ids.task == every.tasks.get_task(b_ids.task).id
    assert [b_ids.token] == [c.token for c in every.recovery.reconcile_snapshot().claims]
    with pytest.raises(corral.InvalidInput):
        store.in_namespace(every.namespace)
