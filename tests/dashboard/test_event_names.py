"""What a page of events names, on SQLite and PostgreSQL: a task by its title, a worker
and an actor `token:N` by the worker's name, and none across namespaces."""

from __future__ import annotations

from corral.model.events import EventFilter
from corral.model.tasks import NewTask
from corral.model.workers import NewWorker
from corral.server.dashboard.event_names import actor_names, task_titles, worker_names
from corral.usecases import workers
from corral.usecases.claims import claim, complete
from corral.usecases.tasks import enqueue


def _done_by(store, title: str, worker_name: str) -> str:
    """A task completed under a claim's token by a worker named `worker_name`; its id."""
    task = enqueue(store, NewTask(title=title))
    worker = workers.register(store, NewWorker(name=worker_name)).worker
    held = claim(store, task.id, worker.id)
    complete(store, task.id, token=held.token)
    return task.id


def test_events_name_titles_and_holders_in_their_namespace_alone(store):
    """In its namespace a completion's actor is its worker's name and its task its title;
    read from another namespace, neither is named."""
    other = store.in_namespace("other")
    task_id = _done_by(other, "their secret task", "their-worker")
    events = other.events.list_events(EventFilter(task_id=task_id, names=("task.completed",)))
    (done,) = events
    assert done.actor.startswith("token:")
    assert {done.actor: "their-worker"} == actor_names(other, events)
    assert {done.worker_id: "their-worker"} == worker_names(other, [done.worker_id])
    assert {} == worker_names(store, [done.worker_id])
    assert {task_id: "their secret task"} == task_titles(other, events)
    assert {} == actor_names(store, events)
    assert {} == task_titles(store, events)


def test_workers_and_claim_tokens_are_named_and_the_operator_left_as_recorded(store):
    """A worker's id and a claim's token are its name; `operator` stays as it is."""
    task_id = _done_by(store, "ours", "our-worker")
    events = store.events.list_events(EventFilter(task_id=task_id))
    named = actor_names(store, events)
    actors = {e.actor for e in events}
    assert "operator" in actors and "operator" not in named
    assert {a for a in actors if a != "operator"} == set(named)
    assert {"our-worker"} == set(named.values())
