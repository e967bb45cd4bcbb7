"""What a page of events names, as a person reads it: a task by its title, a worker by its
name, and an actor `token:N` (a command run under a claim's token, model/actors.py) by
the name of the worker that held that claim.

Each is one store read for the whole page, in the visitor's namespace alone: a task or a
claim's worker of another namespace is not named, and its column shows what the event
recorded.
"""

from __future__ import annotations

from collections.abc import Iterable

from corral.foundation.ids import WORKER_PREFIX
from corral.model.events import Event
from corral.store import Store

TOKEN = "token:"  # noqa: S105 - the prefix of an actor under a claim's token, not a secret


def actor_names(store: Store, events: Iterable[Event]) -> dict[str, str]:
    """The name of each actor of `events` that is a worker or a claim's token, by actor."""
    events = list(events)
    tokens = {
        int(e.actor[len(TOKEN) :])
        for e in events
        if e.actor.startswith(TOKEN) and e.actor[len(TOKEN) :].isdigit()
    }
    named = worker_names(store, [e.actor for e in events])
    if tokens:
        holders = store.task_pages.claim_holders(sorted(tokens))
        named.update({f"{TOKEN}{token}": name for token, name in holders.items()})
    return named


def worker_names(store: Store, ids: Iterable[str | None]) -> dict[str, str]:
    """The name of each worker of `ids` (others left out), by id."""
    wanted = sorted({i for i in ids if i is not None and i.startswith(WORKER_PREFIX)})
    return store.task_pages.worker_names(wanted) if wanted else {}


def task_titles(store: Store, events: Iterable[Event]) -> dict[str, str]:
    """The title of each task `events` name, by id."""
    ids = sorted({e.task_id for e in events if e.task_id is not None})
    return store.task_pages.task_titles(ids) if ids else {}
