"""The events page's keyset pages of the log on SQLite and PostgreSQL: older and newer
pages by id, with the filters."""

from __future__ import annotations

from corral.model.events import EventFilter
from corral.model.tasks import NewTask
from corral.usecases.tasks import enqueue


def test_older_and_newer_pages_hold_every_event_once(store):
    """Read back from the newest 3 at a time, then forward again: the same events, newest
    first, each once; a filter by task pages that task's events alone."""
    ids = [enqueue(store, NewTask(title=f"t{i}")).id for i in range(7)]
    flt = EventFilter(names=("task.created",), limit=3)
    every = [
        e.id for e in store.events.events_around(EventFilter(names=("task.created",), limit=50))
    ]
    assert 7 == len(every)
    assert sorted(every, reverse=True) == every
    pages = [store.events.events_around(flt)]
    while len(pages[-1]) == 3:
        pages.append(store.events.events_around(flt, older_than=pages[-1][-1].id))
    assert every == [e.id for page in pages for e in page]
    newer = store.events.events_around(flt, newer_than=every[-1])
    assert every[-4:-1] == [e.id for e in newer]  # the 3 just above, newest first
    assert [] == store.events.events_around(flt, newer_than=every[0])
    mine = store.events.events_around(EventFilter(task_id=ids[3], limit=5), older_than=every[0] + 1)
    assert {ids[3]} == {e.task_id for e in mine}
