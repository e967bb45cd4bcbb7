"""Messages: each worker (by name) and the orchestrator has an inbox.

Messages are appended and never rewritten (the database refuses an UPDATE or DELETE);
an inbox is read in id order, which is the order they were sent. Acknowledging one adds
a row of its own. Two types act as well as inform: `drain` asks the worker to finish
what it holds and take nothing new, `cancel` (body `{"task_id": ...}`) cancels a task;
both take effect when sent (corral.usecases.messages), so a worker that never reads its inbox obeys.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from corral.foundation import documents
from corral.foundation.durations import iso
from corral.foundation.errors import InvalidInput
from corral.foundation.records import record
from corral.model.tasks import check_name

ORCHESTRATOR = "orchestrator"
MAX_BODY_CHARS = 65_536


@record(frozen=True, slots=True, kw_only=True)
class NewMessage:
    """A message to send; validated on construction."""

    sender: str
    recipient: str
    type: str
    body: Any = None
    # Sent again under the same key (in its namespace), it is the message already sent: a
    # sender whose reply was lost tries again without sending twice (an outbox line's).
    key: str | None = None

    def __post_init__(self) -> None:
        check_name("to", self.recipient)
        check_name("type", self.type)
        check_name("from", self.sender)
        if self.key is not None:
            check_name("key", self.key)
        documents.check("body", self.body)  # first: a deep body would break json.dumps
        if len(json.dumps(self.body)) > MAX_BODY_CHARS:
            raise InvalidInput("body", f"JSON of at most {MAX_BODY_CHARS} characters")


@record(frozen=True, slots=True, kw_only=True)
class Message:
    """A message as stored; `acked_at` is set once it was acknowledged."""

    id: int
    at: datetime
    sender: str
    recipient: str
    type: str
    body: Any
    acked_at: datetime | None
    acked_by: str | None

    def to_dict(self) -> dict[str, Any]:
        """The stable JSON shape (docs/cli.md); one line of `corral msg export`."""
        return {
            "id": self.id,
            "at": iso(self.at),
            "from": self.sender,
            "to": self.recipient,
            "type": self.type,
            "body": self.body,
            "acked_at": iso(self.acked_at),
            "acked_by": self.acked_by,
        }
