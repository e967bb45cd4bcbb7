"""Use case of seed 001's board: move a task to a column, through corral's fenced use cases.

    in-progress   claims.claim for the caller's worker, registered first if it has none
                  (an operator: for the task's owner)
    done          claims.complete   ┐
    review        reviews.submit    │ under the caller's active claim, pinned by its
    blocked       claims.wait       │ fencing token (or under the `token` named)
    todo          claims.release    ┘

The caller is a worker (a worker token acts as the live worker of the token's name: a
seed slot) or an operator (None: as `corral done` without --token, whatever claim is
active). A worker's report is pinned to the token of the claim it holds, read first; the
use case then applies it by compare-and-set on that token, so a claim that ended or
changed hands meanwhile refuses it (StaleToken) and nothing changes. A task held by
another worker, or by nobody, is refused with the store's own reason.
board/model/columns.py maps corral's states onto the board's columns.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from corral.board.model.columns import BoardStatus
from corral.board.usecases import heartbeats
from corral.foundation.errors import CorralError, InvalidInput, Refused, WorkerUnavailable
from corral.foundation.settings import Settings
from corral.model import waiting
from corral.store import Store
from corral.usecases import claims, reviews, workers

if TYPE_CHECKING:
    from corral.model.tasks import Task
    from corral.model.workers import NewWorker, Worker

DEFAULTS = Settings()
ACTIONS = {
    BoardStatus.DONE: "complete",
    BoardStatus.REVIEW: "submit",
    BoardStatus.BLOCKED: "wait",
    BoardStatus.TODO: "release",
}


def move(
    store: Store,
    task_id: str,
    to: BoardStatus,
    *,
    worker: str | None,
    slot: NewWorker | None = None,
    token: int | None = None,
    metadata: dict[str, Any] | None = None,
    settings: Settings = DEFAULTS,
) -> Task:
    """Move `task_id` to column `to` as worker `worker` (None: an operator); the task then.
    `slot` is the worker `worker`'s claim registers when none lives (board/usecases/
    heartbeats.py: a slot's first claim).

    `metadata` is what the report records: the result of `done`; for the others its
    `errorReason`, or else the whole object as JSON, as the error, note or reason.
    """
    if to is BoardStatus.IN_PROGRESS:
        if metadata:
            raise InvalidInput("metadata", "none with in-progress: a claim records nothing more")
        if token is not None:
            raise InvalidInput("claimToken", "none with in-progress: the claim makes a new one")
        if slot is not None:
            heartbeats.claiming(store, slot)
        claims.claim(store, task_id, _claimant(store, task_id, worker).id, settings=settings)
        return store.tasks.get_task(task_id)
    action = ACTIONS[to]
    if worker is not None:
        token = _held_token(store, task_id, action, _answering(store, worker), token)
    text = _text(metadata)
    if to is BoardStatus.DONE:
        return claims.complete(store, task_id, token=token, result=metadata)
    if to is BoardStatus.REVIEW:
        return reviews.submit(store, task_id, token=token, note=text)
    if to is BoardStatus.BLOCKED:
        parked = waiting.reason(waiting.WaitKind.BLOCKED, text or "")
        return claims.wait(store, task_id, reason=parked, token=token)
    return claims.release(store, task_id, token=token, reason=text)


def _claimant(store: Store, task_id: str, worker: str | None) -> Worker:
    """The one live worker a claim is for: the caller's, or (an operator) the task's owner's."""
    if worker is None:
        owner = store.tasks.get_task(task_id).assignee
        if owner is None:
            raise Refused(f"cannot claim task {task_id} for its owner: it has none")
        worker = owner
    found = _answering(store, worker)
    if len(found) > 1:
        many = f"{len(found)} live workers answer to {worker!r}"
        raise WorkerUnavailable(f"{many}: a claim is for one")
    return found[0]


def _answering(store: Store, name: str) -> list[Worker]:
    """The live workers `name` stands for; WorkerUnavailable when there is none."""
    found = workers.answering_to(store, name)
    if not found:
        raise WorkerUnavailable(
            f"no live worker answers to {name!r} (corral worker register --name {name})"
        )
    return found


def _held_token(
    store: Store, task_id: str, action: str, mine: list[Worker], token: int | None
) -> int:
    """The fencing token of the active claim one of `mine` holds on the task (the one named,
    if `token` is given); else the store's reason why not, as an error."""
    ids = {w.id for w in mine}
    for _ in range(claims.ROUNDS):
        claim = store.claims.active_claim(task_id)
        if claim is not None and claim.worker_id in ids and token in (None, claim.token):
            return claim.token
        holder = claim.worker_id if claim is not None and claim.worker_id in ids else mine[0].id
        why = store.claims.why_not_held(task_id, action=action, token=token, holder=holder)
        if why is not None:
            raise why
    raise CorralError(f"task {task_id} kept changing while this was tried; try again")


def _text(metadata: dict[str, Any] | None) -> str | None:
    """What a report other than `done` records of its metadata."""
    if not metadata:
        return None
    reason = metadata.get("errorReason")
    if isinstance(reason, str) and reason.strip():
        return reason
    return json.dumps(metadata, separators=(",", ":"), ensure_ascii=False)
