"""Task commands: add, ready, list, show, cancel, retry, answer, why, events."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from corral.cli import paging, parsing
from corral.cli.commands import Arg, Command, status_filter
from corral.cli.context import Context
from corral.foundation.durations import parse_delay_or_instant
from corral.foundation.errors import InvalidInput
from corral.foundation.printable import one_line
from corral.model.paging import Page
from corral.model.states import TaskStatus
from corral.model.subtasks import MAX_CHILDREN
from corral.model.tasks import NewTask, Task, TaskFilter

STATUSES = [str(s) for s in TaskStatus]


def cmd_add(ctx: Context) -> int:
    """Enqueue a task and print its id."""
    from corral.usecases import tasks  # ready, list and show start without it

    a = ctx.args
    when = 0.0 if a.run_after is None else parse_delay_or_instant("run_after", a.run_after)
    spec = NewTask(
        title=a.title,
        description=a.desc or "",
        queue=a.queue,
        kind=a.kind,
        priority=parsing.whole("priority", a.priority) or 0,
        payload=_with_budget(parsing.json_object("payload", a.payload), a.max_cost, a.max_tokens),
        labels=parsing.labels("label", a.label),
        depends_on=tuple(a.depends_on or ()),
        assignee=a.assignee,
        parent_id=a.parent,
        parent_runs_first=a.parent_runs_first,
        max_attempts=parsing.whole("max_attempts", a.max_attempts, minimum=1),
        retry_base_s=parsing.duration("backoff", a.backoff),
        timeout_s=parsing.positive_duration("timeout", a.timeout),
        run_after_s=when if isinstance(when, float) else 0.0,
        run_at=when if isinstance(when, datetime) else None,
        requires_review=a.review,
    )
    task = tasks.enqueue(ctx.store, spec, settings=ctx.settings)
    ctx.emit(task.to_dict(), task.id)
    return 0


def _with_budget(
    payload: dict[str, Any], max_cost: str | None, max_tokens: str | None
) -> dict[str, Any]:
    """The payload with the task's budget (`--max-cost`, `--max-tokens`) in it."""
    if max_cost is None and max_tokens is None:
        return payload
    from corral.model import budgets  # only a task with a budget needs it

    return budgets.with_budget(
        payload,
        budgets.Budget(
            max_cost_usd=None if max_cost is None else budgets.parse_cost("max_cost", max_cost),
            max_tokens=None
            if max_tokens is None
            else budgets.parse_tokens("max_tokens", max_tokens),
        ),
    )


def cmd_ready(ctx: Context) -> int:
    """List tasks claimable now, in claim order, a page at a time."""
    a = ctx.args
    ask = paging.ask(ctx, "ready", key_size=2, default_limit=100)
    worker = ctx.store.workers.get_worker(a.worker) if a.worker is not None else None
    kinds = tuple(a.kind or ())
    after = None
    if ask.after is not None:  # a cursor: only then are the page records built (cli_latency)
        from corral.model.task_pages import PageKey  # see the line above

        after = PageKey(priority=ask.after[0], seq=ask.after[1])
    found = ctx.store.tasks.ready_tasks(
        queue=a.queue, kinds=kinds, limit=ask.read or 0, worker=worker, after=after
    )
    total = (
        ctx.store.tasks.count_ready(queue=a.queue, kinds=kinds, worker=worker)
        if ask.count
        else None
    )
    page = ask.page(found, lambda t: (t.priority, t.seq), total)
    paging.emit(ctx, ask, page, lambda: _table(page.items) or "no ready tasks")
    return 0


def _table(tasks: Sequence[Task]) -> str:
    """The tasks as a table: the human text of `ready`, whose --json needs no renderer."""
    from corral.cli import render

    return render.task_table(tasks)


def cmd_list(ctx: Context) -> int:
    """List tasks, optionally by status and queue, a page at a time."""
    from corral.cli import render  # human text only

    a = ctx.args
    ask = paging.ask(ctx, "list", key_size=1, default_limit=1000)
    flt = TaskFilter(
        statuses=tuple(TaskStatus(s) for s in parsing.each_of("status", a.status, STATUSES)),
        queue=a.queue,
        kinds=tuple(a.kind or ()),
        parent_id=a.parent,
        limit=ask.read or 0,
        after_seq=None if ask.after is None else ask.after[0],
    )
    total = ctx.store.tasks.count_tasks(flt) if ask.count else None
    page = ask.page(ctx.store.tasks.list_tasks(flt), lambda t: (t.seq,), total)
    paging.emit(ctx, ask, page, lambda: render.task_table(page.items) or "no tasks")
    return 0


def cmd_show(ctx: Context) -> int:
    """Show one task in full."""
    from corral.cli import render  # human text only
    from corral.usecases.usage import task_totals  # for `show` alone

    task = ctx.store.tasks.get_task(ctx.args.id)
    totals = task_totals(ctx.store, task.id)
    children = ctx.store.tasks.list_tasks(TaskFilter(parent_id=task.id, limit=MAX_CHILDREN))
    human = render.task_detail(task)
    if children:
        human += "\n" + render.children(children)
    if totals is not None:
        human += "\n" + render.task_totals(totals, task.attempts)
    work = _work(ctx, task) if task.branch else None
    if work is not None:
        human += "\n" + _work_line(work)
    ctx.emit(
        {
            **task.to_dict(),
            "children": [{"id": c.id, "title": c.title, "status": str(c.status)} for c in children],
            "totals": None if totals is None else totals.to_dict(),
            "work": work,
        },
        human,
    )
    return 0


def _work(ctx: Context, task: Task) -> dict[str, Any]:
    """Where the task's work in a worktree ended, as the store recorded it."""
    review = ctx.store.reviews.get_review(task.id)
    return {
        "outcome": None if review.outcome is None else str(review.outcome),
        "merged_commit": review.merged_commit,
        "backup_refs": list(review.backup_refs),
        "branch_deleted": review.branch_deleted,
        "pr_url": review.pr_url,
        "tests_disabled": list(review.tests_disabled),
    }


def _work_line(work: dict[str, Any]) -> str:
    """`work: landed at 0123456789ab`, with the backup refs and a pull request, if any;
    then what its runs disabled of the tests, a line each."""
    outcome = (work["outcome"] or "not recorded").replace("_", " ")
    line = f"work: {outcome}"
    if work["outcome"] == "landed" and work["merged_commit"]:
        line += f" at {work['merged_commit'][:12]}"
    if work["backup_refs"]:
        line += f" (backups: {', '.join(work['backup_refs'])})"
    if work["pr_url"]:
        line += f" (pull request {work['pr_url']})"
    disabled = work["tests_disabled"]
    return "\n".join([line, *(f"tests disabled: {d}" for d in disabled)])


def cmd_cancel(ctx: Context) -> int:
    """Cancel a task that has not finished."""
    from corral.usecases import tasks  # ready, list and show start without it

    task = tasks.cancel(ctx.store, ctx.args.id, reason=ctx.args.reason)
    ctx.emit(task.to_dict(), f"{task.id} cancelled")
    return 0


def cmd_retry(ctx: Context) -> int:
    """Return a failed or cancelled task to the queue."""
    from corral.usecases import tasks  # ready, list and show start without it

    task = tasks.retry(ctx.store, ctx.args.id)
    ctx.emit(task.to_dict(), f"{task.id} {task.status}")
    return 0


def cmd_answer(ctx: Context) -> int:
    """Answer a task waiting for a person: ready again, its next run told the answer."""
    from corral.usecases import tasks  # ready, list and show start without it

    text = _permission(ctx.args) or ctx.args.text
    if text == "-":
        try:
            text = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput("answer", "UTF-8 text on standard input") from None
    raise_by = None
    if ctx.args.budget is not None:
        from corral.model.budgets import parse_raise  # only an answer that raises a budget

        raise_by = parse_raise("budget", ctx.args.budget)
    task = tasks.answer(ctx.store, ctx.args.id, text, budget=raise_by)
    ctx.emit(task.to_dict(), f"{task.id} {task.status} (answered)")
    return 0


def _permission(a: Any) -> str | None:
    """The answer `--allow` or `--deny [WHY]` makes of a permission request; None without
    either."""
    if not a.allow and a.deny is None:
        return None
    from corral.model.waiting import permission_answer  # a permission's answer only

    if a.allow and (a.deny is not None or a.text):
        raise InvalidInput("allow", "--allow alone (a denial's reason goes with --deny WHY)")
    if a.deny is not None and a.text:
        raise InvalidInput("deny", "the reason as --deny WHY, no TEXT beside it")
    return permission_answer(bool(a.allow), a.deny)


def cmd_why(ctx: Context) -> int:
    """Explain why a task is not running."""
    from corral.usecases import diagnosis  # for `why` alone (worker records)

    found = diagnosis.why(ctx.store, ctx.args.id, settings=ctx.settings)
    lines = [f"{found.task.id} is {found.task.status}:"] + [
        f"  - {one_line(r.message)}" for r in found.reasons
    ]
    ctx.emit(found.to_dict(), "\n".join(lines))
    return 0


def cmd_events(ctx: Context) -> int:
    """Print the newest events, oldest first; with --follow, then each new one."""
    from corral.cli import render  # human text only

    a = ctx.args
    from corral.model.events import EVENT_NAMES, EventFilter  # for `events` alone

    for name in a.type or ():
        if name not in EVENT_NAMES:
            raise InvalidInput("type", "an event name such as task.completed", name)
    since_s = parsing.duration("since", a.since)
    since_at = None if since_s is None else ctx.store.now() - timedelta(seconds=since_s)
    names = tuple(dict.fromkeys(a.type or ()))
    if a.follow:
        from corral.cli import events_follow  # the follower's machinery

        if a.after is not None or a.count or a.paged:
            raise InvalidInput("follow", "no --after, --count or --paged with --follow")
        limit = parsing.whole("limit", a.limit, minimum=0)  # 0: new ones only
        flt = EventFilter(
            task_id=a.task,
            worker_id=a.worker,
            names=names,
            since_at=since_at,
            limit=50 if limit is None else limit,
        )
        return events_follow.follow(ctx, flt)
    ask = paging.ask(ctx, "events", key_size=1, default_limit=50)
    flt = EventFilter(
        task_id=a.task,
        worker_id=a.worker,
        names=names,
        since_at=since_at,
        limit=ask.read or 0,
        before_id=None if ask.after is None else ask.after[0],
    )
    total = ctx.store.events.count_events(flt) if ask.count else None
    # The newest first, so the next page is the older events; each page prints oldest first.
    newest = ctx.store.events.list_events(flt)[::-1]
    page = ask.page(newest, lambda e: (e.id,), total)
    events = page.items[::-1]
    shown = Page(items=events, next=page.next, total=page.total)
    paging.emit(ctx, ask, shown, lambda: "\n".join(map(render.event_line, events)) or "no events")
    return 0


ID = Arg("id")

COMMANDS = (
    Command(
        "add",
        cmd_add,
        "enqueue a task (prints its id)",
        Arg("title"),
        Arg("--desc", help="longer description"),
        Arg("--kind", default="default", help="capability a worker needs (default: default)"),
        Arg("--queue", default="default", help="queue name (default: default)"),
        Arg("--priority", help="whole number; higher runs first (default 0)"),
        Arg("--payload", help="JSON object handed to the worker"),
        Arg("--label", action="append", metavar="K=V", help="label, repeatable"),
        Arg(
            "--depends-on",
            action="extend",
            nargs="+",
            metavar="ID",
            help="tasks that must be done first",
        ),
        Arg("--assignee", metavar="WORKER", help="only this worker (id or name) may claim it"),
        Arg("--parent", metavar="ID", help="parent task: it waits for this child"),
        Arg(
            "--parent-runs-first",
            action="store_true",
            help="with --parent: this child waits for its parent instead",
        ),
        Arg("--max-attempts", help="runs before it fails for good"),
        Arg("--backoff", metavar="DURATION", help="first retry delay, doubling (e.g. 10s)"),
        Arg("--timeout", metavar="DURATION", help="longest a run may take (e.g. 30m)"),
        Arg("--max-cost", metavar="DOLLARS", help="its agent runs stop at this spend (2.50)"),
        Arg("--max-tokens", metavar="N", help="its agent runs stop at these tokens (2M)"),
        Arg("--run-after", metavar="DURATION|ISO", help="delay (10m) or time (ISO 8601)"),
        Arg("--review", action="store_true", help="require review before done"),
    ),
    Command(
        "ready",
        cmd_ready,
        "tasks claimable now, in claim order",
        *paging.args(100),
        Arg("--queue"),
        Arg("--kind", action="append", help="only this kind, repeatable"),
        Arg(
            "--worker",
            metavar="ID",
            help="only tasks this worker may claim (kinds, queues, assignee)",
        ),
    ),
    Command(
        "list",
        cmd_list,
        "list tasks",
        status_filter(STATUSES),
        Arg("--queue"),
        Arg("--kind", action="append"),
        Arg("--parent", metavar="ID", help="only the children of this task"),
        *paging.args(1000),
    ),
    Command("show", cmd_show, "show a task", ID),
    Command("retry", cmd_retry, "return a failed, cancelled or waiting task to the queue", ID),
    Command(
        "answer",
        cmd_answer,
        "answer a waiting task: back to ready, its next run told TEXT",
        ID,
        Arg("text", nargs="?", metavar="TEXT", help="the answer (- reads standard input)"),
        Arg(
            "--budget",
            metavar="+X",
            help="raise its budget: +1.50 (dollars) or +500k (tokens)",
        ),
        Arg("--allow", action="store_true", help="allow the tool call a permission asks for"),
        Arg(
            "--deny",
            nargs="?",
            const="",
            metavar="WHY",
            help="deny it (WHY: told to the agent)",
        ),
    ),
    Command("why", cmd_why, "why is this task not running?", ID),
    Command("cancel", cmd_cancel, "cancel a task", ID, Arg("--reason")),
    Command(
        "events",
        cmd_events,
        "the audit trail, newest last",
        Arg("--task", metavar="ID"),
        Arg("--worker", metavar="ID"),
        Arg(
            "--type",
            action="extend",
            nargs="+",
            metavar="NAME",
            help="only events of this name (task.completed ...), repeatable",
        ),
        Arg("--since", metavar="DURATION", help="only events of the last DURATION (10m)"),
        Arg("--limit", metavar="N", help="how many of the newest to print (default 50)"),
        *paging.args(50)[1:],
        Arg("--follow", action="store_true", help="then print each new event, until Ctrl-C"),
    ),
)
