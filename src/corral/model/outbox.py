"""A run's outbox line (seed 004): what an agent that only writes files asks of corral.

With `[files] mirror = true` each run's agent gets `CORRAL_OUTBOX`, a file it appends JSON
lines to, one object a line, each naming its verb and the claim's token:

    {"verb": "msg", "token": 7, "type": "progress", "body": {"step": 2}}   (to: orchestrator)
    {"verb": "ask", "token": 7, "question": "Which database?"}   the task waits for a person
    {"verb": "done", "token": 7, "result": {"pr": 17}}           as `corral done --token 7`
    {"verb": "fail", "token": 7, "error": "the tests fail"}      as `corral fail --token 7`

`parse_line` turns one line's bytes into an `OutboxLine` or refuses it (InvalidInput,
naming the field): not UTF-8 JSON, an object nested too deep, NUL, a verb it does not
know, a token that is not a whole number, a field missing, a field of another verb. Pure:
the runner reads the file and applies what this returns (runtime/worker/outbox.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from corral.foundation import documents
from corral.foundation.documents import MAX_INT64
from corral.foundation.errors import InvalidInput
from corral.model.messages import ORCHESTRATOR

OUTBOX_SUFFIX = ".outbox"  # beside the run's transcript: runs/<run id>.outbox
# The longest line taken: a message's body (64 KiB of JSON) with room for the rest.
MAX_LINE_BYTES = 128 * 1024
# A message through the outbox is a message, never an order: `drain` and `cancel` act on
# other workers and tasks (usecases/messages.py), which a task's agent may not.
ORDERS = ("drain", "cancel")
# verb -> (the fields it needs, the fields it may have), beside `verb` and `token`.
FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "msg": (("type",), ("to", "body")),
    "ask": (("question",), ()),
    "done": ((), ("result",)),
    "fail": (("error",), ()),
}


@dataclass(frozen=True, slots=True, kw_only=True)
class OutboxLine:
    """One line taken from an outbox: its verb, the token it is fenced by, its fields."""

    verb: str
    token: int
    fields: dict[str, Any]

    def text(self, name: str) -> str:
        """Field `name`, which `parse_line` checked is text."""
        value: str = self.fields[name]
        return value


def parse_line(raw: bytes) -> OutboxLine:
    """The line `raw` (without its newline) as an OutboxLine; InvalidInput otherwise."""
    if len(raw) > MAX_LINE_BYTES:
        raise InvalidInput("line", f"at most {MAX_LINE_BYTES} bytes (the rest is skipped)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("line", "UTF-8 text") from None
    value = documents.parse("line", text)
    if not isinstance(value, dict):
        raise InvalidInput("line", 'a JSON object such as {"verb": "done", "token": 7}', text)
    verb = value.pop("verb", None)
    if verb not in FIELDS:
        raise InvalidInput("verb", f"one of {', '.join(FIELDS)}", verb)
    token = value.pop("token", None)
    if isinstance(token, bool) or not isinstance(token, int) or not 1 <= token <= MAX_INT64:
        raise InvalidInput("token", "the claim's token (CORRAL_CLAIM_TOKEN), a whole number", token)
    _check_fields(verb, value)
    return OutboxLine(verb=verb, token=token, fields=value)


def _check_fields(verb: str, fields: dict[str, Any]) -> None:
    """The fields of `verb`: those it needs present, no other, text where text is meant."""
    needed, optional = FIELDS[verb]
    for name in needed:
        if name not in fields:
            raise InvalidInput(name, f"a {name} for verb {verb}")
    unknown = sorted(set(fields) - {*needed, *optional})
    if unknown:
        raise InvalidInput(unknown[0], f"only {', '.join((*needed, *optional)) or 'no field'}"
                           f" beside verb and token for verb {verb}")  # fmt: skip
    for name in (*needed, "to"):
        if name in fields and (not isinstance(fields[name], str) or not fields[name].strip()):
            raise InvalidInput(name, "text that is not empty", fields[name])
    if verb == "msg":
        fields.setdefault("to", ORCHESTRATOR)
        if fields["type"] in ORDERS:
            raise InvalidInput("type", f"a message type other than {' and '.join(ORDERS)}")
