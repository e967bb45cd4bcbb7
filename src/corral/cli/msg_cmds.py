"""Message commands: msg send | inbox [--follow] | ack | export (JSONL)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from contextlib import suppress
from typing import TYPE_CHECKING

from corral.cli import parsing
from corral.cli.context import Context
from corral.errors import NotFound

if TYPE_CHECKING:
    from corral.messages import Message

FOLLOW_POLL_S = 0.2


def _sender(ctx: Context) -> str:
    return ctx.args.sender or os.environ.get("CORRAL_WORKER_ID") or "operator"


def cmd_send(ctx: Context) -> int:
    """Append a message to a worker's (or the orchestrator's) inbox; prints its id."""
    from corral import inbox

    a = ctx.args
    body = parsing.json_value("body", a.body)
    message = inbox.send(ctx.store, to=a.to, type=a.type, body=body, sender=_sender(ctx))
    ctx.emit(message.to_dict(), str(message.id))
    return 0


def _inbox_name(ctx: Context, recipient: str) -> str:
    """A worker's inbox is its name; a worker id is read as its name."""
    from corral.ids import WORKER_PREFIX

    if recipient.startswith(WORKER_PREFIX):
        with suppress(NotFound):
            return ctx.store.get_worker(recipient).name
    return recipient


def _line(message: Message) -> str:
    acked = " (acked)" if message.acked_at else ""
    body = "" if message.body is None else " " + json.dumps(message.body)
    return f"{message.id} {message.at:%H:%M:%S} {message.sender} {message.type}{body}{acked}"


def cmd_inbox(ctx: Context) -> int:
    """Messages to WORKER (or orchestrator) in order; unacknowledged ones unless --all."""
    a = ctx.args
    count = parsing.whole("count", a.count, minimum=1)
    a.recipient = _inbox_name(ctx, a.recipient)
    found = ctx.store.list_messages(recipient=a.recipient, unacked=not a.all)
    if not a.follow:
        ctx.emit([m.to_dict() for m in found], "\n".join(map(_line, found)) or "no messages")
        return 0
    return _follow(ctx, found, count)


def _follow(ctx: Context, seen: list[Message], count: int | None) -> int:
    """Print each message as it arrives (JSON lines with --json) until --count or Ctrl-C."""
    from corral.clock import SystemClock

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
        batch = ctx.store.list_messages(
            recipient=ctx.args.recipient, after_id=after, unacked=not ctx.args.all
        )


def cmd_ack(ctx: Context) -> int:
    """Acknowledge a message."""
    from corral import inbox

    message = inbox.ack(ctx.store, ctx.args.id, actor=_sender(ctx))
    ctx.emit(message.to_dict(), f"{message.id} acknowledged")
    return 0


def cmd_export(ctx: Context) -> int:
    """Every message (or every one to --to) as JSON lines, oldest first."""
    after = 0
    while True:
        batch = ctx.store.list_messages(recipient=ctx.args.to, after_id=after, limit=1000)
        for message in batch:
            sys.stdout.write(json.dumps(message.to_dict()) + "\n")
        if len(batch) < 1000:
            return 0
        after = batch[-1].id


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add `corral msg ...` to the parser."""
    group = sub.add_parser("msg", parents=[common], help="worker and orchestrator inboxes")
    msub = group.add_subparsers(dest="msg_command", required=True, metavar="COMMAND")
    sender = argparse.ArgumentParser(add_help=False)
    sender.add_argument(
        "--from", dest="sender", help="who sends or acks (default $CORRAL_WORKER_ID or operator)"
    )

    p = msub.add_parser("send", parents=[common, sender], help="append a message to an inbox")
    p.add_argument("--to", required=True, help="a worker's name or id, or orchestrator")
    p.add_argument("--type", required=True, help="e.g. note, done, drain, cancel")
    p.add_argument("--body", metavar="JSON", help="any JSON value")
    p.set_defaults(handler=cmd_send)

    p = msub.add_parser("inbox", parents=[common], help="read an inbox in order")
    p.add_argument("recipient", metavar="WORKER", help="a worker's name, or orchestrator")
    p.add_argument("--all", action="store_true", help="acknowledged messages too")
    p.add_argument("--follow", action="store_true", help="keep printing new messages")
    p.add_argument("--count", help="with --follow: exit after this many messages")
    p.set_defaults(handler=cmd_inbox)

    p = msub.add_parser("ack", parents=[common, sender], help="acknowledge a message")
    p.add_argument("id")
    p.set_defaults(handler=cmd_ack)

    p = msub.add_parser("export", parents=[common], help="every message as JSON lines")
    p.add_argument("--to", help="only the messages to this inbox")
    p.set_defaults(handler=cmd_export)
