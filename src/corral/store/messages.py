"""Store operations on messages: append, read an inbox in order, acknowledge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from corral.foundation import errors
from corral.store import rows
from corral.store.driver import Driver, Json, Tx
from corral.store.operations import VIEWER, WORKER, Repository, served

if TYPE_CHECKING:
    from corral.model.messages import Message, NewMessage


class Messages(Repository):
    """Inboxes: append-only messages and their acknowledgements."""

    NAME = "messages"

    @served(WORKER, frees_work=False)
    def send_message(self, spec: NewMessage) -> Message:
        """Append a message; a worker named by id is addressed by its name. With a key
        sent before (in this namespace), the message sent then, and nothing appended."""
        from corral.model.messages import ORCHESTRATOR

        with self._driver.write() as tx:
            recipient = spec.recipient
            if recipient != ORCHESTRATOR:
                owner = tx.one("inbox_owner", recipient=recipient)
                if owner is None:
                    raise errors.InvalidInput(
                        "to", "orchestrator, or the name or id of a registered worker", recipient
                    )
                recipient = owner["name"]
            row = tx.one(
                "insert_message",
                sender=spec.sender,
                recipient=recipient,
                type=spec.type,
                body=Json(spec.body),
                key=spec.key,
            )
            if row is None:  # its key was sent before: that message, not a second one
                row = tx.one("message_by_key", key=spec.key)
            assert row is not None  # inserted, or there under its key
            return _message_in(tx, self._driver, row["id"])

    @served(VIEWER)
    def list_messages(
        self,
        *,
        recipient: str | None = None,
        after_id: int = 0,
        unacked: bool = False,
        limit: int = 1000,
    ) -> list[Message]:
        """Messages in the order they were sent, to `recipient` (or to anyone)."""
        with self._driver.read() as tx:
            found = tx.all(
                "list_messages",
                recipient=recipient,
                after_id=after_id,
                unacked=int(unacked),
                limit=limit,
            )
            return [rows.message(self._driver, r) for r in found]

    @served(WORKER, frees_work=False)
    def ack_message(self, message_id: int, *, actor: str) -> Message:
        """Acknowledge a message; acknowledging it again changes nothing."""
        with self._driver.write() as tx:
            _message_in(tx, self._driver, message_id)
            tx.run("ack_message", message_id=message_id, actor=actor)
            return _message_in(tx, self._driver, message_id)


def _message_in(tx: Tx, driver: Driver, message_id: int) -> Message:
    row = tx.one("get_message", message_id=message_id)
    if row is None:
        raise errors.NotFound("message", str(message_id))
    return rows.message(driver, row)
