"""Task commands: add, ready, list, show, cancel, retry, why, events."""

from __future__ import annotations

import argparse
from datetime import datetime

from corral.cli import parsing, render
from corral.cli.context import Context
from corral.durations import parse_delay_or_instant
from corral.errors import InvalidInput
from corral.tasks import NewTask, TaskFilter, TaskStatus

STATUSES = [str(s) for s in TaskStatus]


def cmd_add(ctx: Context) -> int:
    """Enqueue a task and print its id."""
    from corral import queue

    a = ctx.args
    when = 0.0 if a.run_after is None else parse_delay_or_instant("run_after", a.run_after)
    spec = NewTask(
        title=a.title,
        description=a.desc or "",
        queue=a.queue,
        kind=a.kind,
        priority=parsing.whole("priority", a.priority) or 0,
        payload=parsing.json_object("payload", a.payload),
        labels=parsing.labels("label", a.label),
        depends_on=tuple(a.depends_on or ()),
        assignee=a.assignee,
        parent_id=a.parent,
        max_attempts=parsing.whole("max_attempts", a.max_attempts, minimum=1),
        retry_base_s=parsing.duration("backoff", a.backoff),
        timeout_s=parsing.positive_duration("timeout", a.timeout),
        run_after_s=when if isinstance(when, float) else 0.0,
        run_at=when if isinstance(when, datetime) else None,
        requires_review=a.review,
    )
    task = queue.enqueue(ctx.store, spec, settings=ctx.settings)
    ctx.emit(task.to_dict(), task.id)
    return 0


def cmd_ready(ctx: Context) -> int:
    """List tasks claimable now, in claim order."""
    a = ctx.args
    limit = parsing.whole("limit", a.limit, minimum=1) or 100
    worker = ctx.store.get_worker(a.worker) if a.worker else None
    tasks = ctx.store.ready_tasks(
        queue=a.queue, kinds=tuple(a.kind or ()), limit=limit, worker=worker
    )
    ctx.emit([t.to_dict() for t in tasks], render.task_table(tasks) or "no ready tasks")
    return 0


def cmd_list(ctx: Context) -> int:
    """List tasks, optionally by status and queue."""
    a = ctx.args
    for status in a.status or ():
        if status not in STATUSES:
            raise InvalidInput("status", f"one of {', '.join(STATUSES)}", status)
    flt = TaskFilter(
        statuses=tuple(TaskStatus(s) for s in a.status or ()),
        queue=a.queue,
        kinds=tuple(a.kind or ()),
        limit=parsing.whole("limit", a.limit, minimum=1) or 1000,
    )
    tasks = ctx.store.list_tasks(flt)
    ctx.emit([t.to_dict() for t in tasks], render.task_table(tasks) or "no tasks")
    return 0


def cmd_show(ctx: Context) -> int:
    """Show one task in full."""
    task = ctx.store.get_task(ctx.args.id)
    ctx.emit(task.to_dict(), render.task_detail(task))
    return 0


def cmd_cancel(ctx: Context) -> int:
    """Cancel a task that has not finished."""
    from corral import queue

    task = queue.cancel(ctx.store, ctx.args.id, reason=ctx.args.reason)
    ctx.emit(task.to_dict(), f"{task.id} cancelled")
    return 0


def cmd_retry(ctx: Context) -> int:
    """Return a failed or cancelled task to the queue."""
    from corral import queue

    task = queue.retry(ctx.store, ctx.args.id)
    ctx.emit(task.to_dict(), f"{task.id} {task.status}")
    return 0


def cmd_why(ctx: Context) -> int:
    """Explain why a task is not running."""
    from corral import diagnosis

    found = diagnosis.why(ctx.store, ctx.args.id, settings=ctx.settings)
    lines = [f"{found.task.id} is {found.task.status}:"] + [
        f"  - {r.message}" for r in found.reasons
    ]
    ctx.emit(found.to_dict(), "\n".join(lines))
    return 0


def cmd_events(ctx: Context) -> int:
    """Print the newest events, oldest first."""
    a = ctx.args
    from corral.events import EventFilter

    flt = EventFilter(
        task_id=a.task, worker_id=a.worker, limit=parsing.whole("limit", a.limit, minimum=1) or 50
    )
    events = ctx.store.list_events(flt)
    ctx.emit(
        [e.to_dict() for e in events],
        "\n".join(render.event_line(e) for e in events) or "no events",
    )
    return 0


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], common: argparse.ArgumentParser
) -> None:
    """Add the task commands to the parser."""
    p = sub.add_parser("add", parents=[common], help="enqueue a task (prints its id)")
    p.add_argument("title")
    p.add_argument("--desc", help="longer description")
    p.add_argument("--kind", default="default", help="capability a worker needs (default: default)")
    p.add_argument("--queue", default="default", help="queue name (default: default)")
    p.add_argument("--priority", help="whole number; higher runs first (default 0)")
    p.add_argument("--payload", help="JSON object handed to the worker")
    p.add_argument("--label", action="append", metavar="K=V", help="label, repeatable")
    p.add_argument(
        "--depends-on",
        action="extend",
        nargs="+",
        metavar="ID",
        help="tasks that must be done first",
    )
    p.add_argument(
        "--assignee", metavar="WORKER", help="only this worker (id or name) may claim it"
    )
    p.add_argument("--parent", metavar="ID", help="parent task")
    p.add_argument("--max-attempts", help="runs before it fails for good")
    p.add_argument("--backoff", metavar="DURATION", help="first retry delay, doubling (e.g. 10s)")
    p.add_argument("--timeout", metavar="DURATION", help="longest a run may take (e.g. 30m)")
    p.add_argument("--run-after", metavar="DURATION|ISO", help="delay (10m) or time (ISO 8601)")
    p.add_argument("--review", action="store_true", help="require review before done")
    p.set_defaults(handler=cmd_add)

    p = sub.add_parser("ready", parents=[common], help="tasks claimable now, in claim order")
    p.add_argument("--limit")
    p.add_argument("--queue")
    p.add_argument("--kind", action="append", help="only this kind, repeatable")
    p.add_argument(
        "--worker", metavar="ID", help="only tasks this worker may claim (kinds, queues, assignee)"
    )
    p.set_defaults(handler=cmd_ready)

    p = sub.add_parser("list", parents=[common], help="list tasks")
    p.add_argument(
        "--status", action="extend", nargs="+", metavar="S", help=f"any of: {', '.join(STATUSES)}"
    )
    p.add_argument("--queue")
    p.add_argument("--kind", action="append")
    p.add_argument("--limit")
    p.set_defaults(handler=cmd_list)

    for name, handler, text in (
        ("show", cmd_show, "show a task"),
        ("retry", cmd_retry, "return a failed or cancelled task to the queue"),
        ("why", cmd_why, "why is this task not running?"),
    ):
        p = sub.add_parser(name, parents=[common], help=text)
        p.add_argument("id")
        p.set_defaults(handler=handler)

    p = sub.add_parser("cancel", parents=[common], help="cancel a task")
    p.add_argument("id")
    p.add_argument("--reason")
    p.set_defaults(handler=cmd_cancel)

    p = sub.add_parser("events", parents=[common], help="the audit trail, newest last")
    p.add_argument("--task", metavar="ID")
    p.add_argument("--worker", metavar="ID")
    p.add_argument("--limit")
    p.set_defaults(handler=cmd_events)
