"""Use cases of seed 001's sessions: spawn one for the pool, list them, find one, kill one.

A session is a task of kind `session` (board/model/sessions.py), so the pool runs it as any
other task and killing it is cancelling that task: the runner that holds it finds its
claim gone at its next heartbeat and ends the command's whole process tree.

A label names one session: a spawn whose label is in use answers that session and adds
nothing, so a spawn re-sent after its answer was lost does not start a second agent. The
check is a read before the add, not one transaction with it: two spawns of one new label
at the same instant may both add a task (the store has no unique index on labels), and
then the id names both: a kill cancels both.
"""

from __future__ import annotations

from corral.board.model.sessions import KIND, TASK_ID, NewSession, session_id
from corral.foundation.errors import NotFound
from corral.foundation.records import replace
from corral.foundation.settings import Settings
from corral.model.states import FINAL, TaskStatus
from corral.model.tasks import Task, TaskFilter
from corral.store import Store
from corral.usecases import tasks, workers

DEFAULTS = Settings()
# Sessions one label may name: one, or a few after spawns that raced (module docstring).
MAX_FOUND = 100
# Active claims read to find a slot's: far more than any pool holds at once.
MAX_CLAIMS = 10_000
KILLED = "session killed"


def spawn(store: Store, spec: NewSession, *, settings: Settings = DEFAULTS) -> tuple[Task, bool]:
    """The session's task, and whether this call added it (False: its label was in use).
    A slot's session is linked to the one claim its slot holds now, if it holds one; its
    timeout is the board's default when the spawn names none."""
    if spec.label is not None:
        found = _labelled(store, spec.label)
        if found:
            return found[0], False
    if spec.timeout_s is None:
        spec = replace(spec, timeout_s=settings.board_timeout_s)
    if spec.slot is not None:
        spec = replace(spec, claim=_held_by(store, spec.slot))
    return tasks.enqueue(store, spec.task(), settings=settings), True


def _held_by(store: Store, slot: str) -> tuple[str, int] | None:
    """(task, fencing token) of the one active claim slot `slot`'s live workers hold; None
    when they hold none or several (which of them a session is for, nothing says)."""
    ids = {w.id for w in workers.answering_to(store, slot)}
    held = [c for c in store.claims.running_tasks(MAX_CLAIMS) if c.worker_id in ids]
    return (held[0].task_id, held[0].token) if len(held) == 1 else None


def listed(store: Store, *, statuses: tuple[TaskStatus, ...] = (), limit: int = 1000) -> list[Task]:
    """The sessions, newest first: a loop polling for the one it just spawned finds it
    among the first, however many came before."""
    flt = TaskFilter(statuses=statuses, kinds=(KIND,), limit=limit, newest_first=True)
    return store.tasks.list_tasks(flt)


def find(store: Store, session: str) -> list[Task]:
    """The task(s) of session `session` (a label, or a task id), newest first; NotFound
    when it names none."""
    if TASK_ID.fullmatch(session):
        try:
            task = store.tasks.get_task(session)
        except NotFound:
            raise NotFound("session", session) from None
        found = [task] if task.kind == KIND and session_id(task) == session else []
    else:
        found = _labelled(store, session)
    if not found:
        raise NotFound("session", session)
    return found


def kill(store: Store, session: str) -> list[Task]:
    """Cancel the session's unfinished task(s); refused (naming its state) when it finished."""
    found = find(store, session)
    unfinished = [t for t in found if t.status not in FINAL] or found[:1]
    return [tasks.cancel(store, t.id, reason=KILLED) for t in unfinished]


def _labelled(store: Store, label: str) -> list[Task]:
    return store.tasks.tasks_with_payload(KIND, "session", label, MAX_FOUND)
