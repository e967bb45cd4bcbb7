"""An outbox line parsed (model/outbox.py): the four verbs taken with their fields, every
other line refused naming the field and what was expected."""

# SIM300: asserts read `expected == actual` (STYLE.md habit 10).

from __future__ import annotations

import pytest

from corral.foundation.errors import InvalidInput
from corral.model.outbox import MAX_LINE_BYTES, OutboxLine, parse_line


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (b'{"verb": "done", "token": 7}', OutboxLine(verb="done", token=7, fields={})),
        (b'{"verb": "done", "token": 7, "result": [1]}',
         OutboxLine(verb="done", token=7, fields={"result": [1]})),
        (b'{"verb": "fail", "token": 7, "error": "e"}',
         OutboxLine(verb="fail", token=7, fields={"error": "e"})),
        (b'{"verb": "ask", "token": 7, "question": "q?"}',
         OutboxLine(verb="ask", token=7, fields={"question": "q?"})),
        (b'{"verb": "msg", "token": 7, "type": "note"}',
         OutboxLine(verb="msg", token=7, fields={"type": "note", "to": "orchestrator"})),
        (b'{"verb": "msg", "token": 7, "type": "note", "to": "slot-2", "body": {"a": 1}}',
         OutboxLine(verb="msg", token=7,
                    fields={"type": "note", "to": "slot-2", "body": {"a": 1}})),
    ],
)  # fmt: skip
def test_the_four_verbs(raw: bytes, expected: OutboxLine) -> None:
    """Each verb with its fields; a message goes to the orchestrator unless it says."""
    assert expected == parse_line(raw)


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        (b"{", "line"),
        (b"7", "line"),
        (b"\xc3\x28", "line"),
        (b'{"verb": "done", "token": 7, "result": "\\u0000"}', "line"),
        (b'{"verb": "done", "token": 7, "result": ' + b"[" * 65 + b"]" * 65 + b"}", "line"),
        (b'{"verb": "done", "token": NaN}', "line"),
        (b"x" * (MAX_LINE_BYTES + 1), "line"),
        (b'{"token": 7}', "verb"),
        (b'{"verb": "rm", "token": 7}', "verb"),
        (b'{"verb": "done"}', "token"),
        (b'{"verb": "done", "token": "7"}', "token"),
        (b'{"verb": "done", "token": 0}', "token"),
        (b'{"verb": "done", "token": 9223372036854775808}', "token"),
        (b'{"verb": "done", "token": 7, "error": "x"}', "error"),
        (b'{"verb": "fail", "token": 7}', "error"),
        (b'{"verb": "fail", "token": 7, "error": " "}', "error"),
        (b'{"verb": "ask", "token": 7, "question": 3}', "question"),
        (b'{"verb": "msg", "token": 7, "type": "drain"}', "type"),
        (b'{"verb": "msg", "token": 7, "type": "note", "to": ""}', "to"),
    ],
)
def test_every_other_line_is_refused_naming_its_field(raw: bytes, field: str) -> None:
    """InvalidInput naming the field, never another error."""
    with pytest.raises(InvalidInput) as refused:
        parse_line(raw)
    assert field == refused.value.field
