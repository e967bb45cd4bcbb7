"""Message commands: msg send | inbox [--follow] | ack | export (JSONL)."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

from corral.cli import parsing
from corral.cli.commands import Arg, Command
from corral.cli.context import Context
from corral.foundation.clock import SystemClock
from corral.foundation.printable import one_line
from corral.usecases import messages

if TYPE_CHECKING:
    from corral.model.messages import Message

FOLLOW_POLL_S = 0.2


def _sender(ctx: Context) -> str:
    return ctx.args.sender or os.environ.get("CORRAL_WORKER_ID") or "operator"


def cmd_send(ctx: Context) -> int:
    """Append a message to a worker's (or the orchestrator's) inbox; prints its id."""
    a = ctx.args
    body = parsing.json_value("body", a.body)
    message = messages.send(ctx.store, to=a.to, type=a.type, body=body, sender=_sender(ctx))
    ctx.emit(message.to_dict(), str(message.id))
    return 0


def _line(message: Message) -> str:
    acked = " (acked)" if message.acked_at else ""
    body = "" if message.body is None else " " + json.dumps(message.body)
    line = f"{message.id} {message.at:%H:%M:%S} {message.sender} {message.type}{body}{acked}"
    return one_line(line)


def cmd_inbox(ctx: Context) -> int:
    """Messages to WORKER (or orchestrator) in order; unacknowledged ones unless --all."""
    a = ctx.args
    count = parsing.whole("count", a.count, minimum=1)
    found = messages.inbox(ctx.store, a.recipient, unacked=not a.all)
    if not a.follow:
        ctx.emit_all(found, lambda: "\n".join(map(_line, found)) or "no messages")
        return 0
    return _follow(ctx, found, count)


def _follow(ctx: Context, seen: list[Message], count: int | None) -> int:
    """Print each message as it arrives (JSON lines with --json) until --count or Ctrl-C."""
    clock, shown, after = SystemClock(), 0, 0
    batch = seen
    while True:
        for message in batch:
            line = json.dumps(message.to_dict()) if ctx.json else _line(message)
            sys.stdout.write(line + "\n")
            after, shown = message.id, shown + 1
            if count is not None and shown >= count:
                sys.stdout.flush()
                return 0
        sys.stdout.flush()
        clock.sleep(FOLLOW_POLL_S)
        batch = messages.inbox(
            ctx.store, ctx.args.recipient, after_id=after, unacked=not ctx.args.all
        )


def cmd_ack(ctx: Context) -> int:
    """Acknowledge a message."""
    message = messages.ack(ctx.store, ctx.args.id, actor=_sender(ctx))
    ctx.emit(message.to_dict(), f"{message.id} acknowledged")
    return 0


def cmd_export(ctx: Context) -> int:
    """Every message (or every one to --to) as JSON lines, oldest first."""
    after = 0
    while True:
        batch = ctx.store.messages.list_messages(recipient=ctx.args.to, after_id=after, limit=1000)
        for message in batch:
            sys.stdout.write(json.dumps(message.to_dict()) + "\n")
        if len(batch) < 1000:
            return 0
        after = batch[-1].id


SENDER = Arg(
    "--from", dest="sender", help="who sends or acks (default $CORRAL_WORKER_ID or operator)"
)

COMMANDS = (
    Command(
        "msg send",
        cmd_send,
        "append a message to an inbox",
        SENDER,
        Arg("--to", required=True, help="a worker's name or id, or orchestrator"),
        Arg("--type", required=True, help="e.g. note, done, drain, cancel"),
        Arg("--body", metavar="JSON", help="any JSON value"),
    ),
    Command(
        "msg inbox",
        cmd_inbox,
        "read an inbox in order",
        Arg("recipient", metavar="WORKER", help="a worker's name, or orchestrator"),
        Arg("--all", action="store_true", help="acknowledged messages too"),
        Arg("--follow", action="store_true", help="keep printing new messages"),
        Arg("--count", help="with --follow: exit after this many messages"),
    ),
    Command("msg ack", cmd_ack, "acknowledge a message", Arg("id"), SENDER),
    Command(
        "msg export",
        cmd_export,
        "every message as JSON lines",
        Arg("--to", help="only the messages to this inbox"),
    ),
)
