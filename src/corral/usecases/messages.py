"""Use cases of the message channel: send (with the effect of `drain` and `cancel`), read
an inbox, ack.

`drain` to a worker marks it draining before the message is appended; `cancel` with
`{"task_id": ...}` cancels that task first (its holder finds its token stale at its next
report and its runner stops the command). Either effect is its own compare-and-set; if
it is refused, nothing is appended.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from corral.foundation.documents import MAX_INT64
from corral.foundation.errors import InvalidInput, NotFound
from corral.foundation.ids import WORKER_PREFIX
from corral.model.messages import ORCHESTRATOR, Message, NewMessage
from corral.model.states import WORKER_ALLOWED_FROM
from corral.model.tasks import check_name
from corral.store import Store


def send(
    store: Store, *, to: str, type: str, body: Any = None, sender: str, key: str | None = None
) -> Message:
    """Append a message to `to`'s inbox, applying `drain` and `cancel` first; with `key`
    sent before, the message sent then (nothing appended)."""
    spec = NewMessage(sender=sender, recipient=to, type=type, body=body, key=key)
    if type == "drain" and to != ORCHESTRATOR:
        for worker in store.workers.list_workers():
            if to in (worker.id, worker.name) and worker.status in WORKER_ALLOWED_FROM["drain"]:
                store.workers.drain_worker(worker.id, actor=sender)
    elif type == "cancel":
        task_id = body.get("task_id") if isinstance(body, dict) else None
        if not isinstance(task_id, str):
            raise InvalidInput("body", 'an object naming the task, {"task_id": "t-..."}', body)
        store.tasks.cancel(task_id, reason=f"cancelled by a message from {sender}", actor=sender)
    return store.messages.send_message(spec)


def ack(store: Store, message_id: str, *, actor: str) -> Message:
    """Acknowledge message `message_id` (a whole number)."""
    check_name("from", actor)  # as `send` checks its sender
    if not (message_id.isascii() and message_id.isdigit()):
        raise InvalidInput("id", "a message id (a whole number)", message_id)
    if len(message_id) > 19 or int(message_id) > MAX_INT64:
        raise InvalidInput("id", f"a message id from 1 to {MAX_INT64}", message_id)
    return store.messages.ack_message(int(message_id), actor=actor)


def inbox(store: Store, recipient: str, *, unacked: bool, after_id: int = 0) -> list[Message]:
    """The messages to `recipient` after `after_id`, oldest first; only unacknowledged ones
    if `unacked`. A worker's inbox is its name: a worker's id reads the same inbox."""
    if recipient.startswith(WORKER_PREFIX):
        with suppress(NotFound):
            recipient = store.workers.get_worker(recipient).name
    return store.messages.list_messages(recipient=recipient, after_id=after_id, unacked=unacked)
