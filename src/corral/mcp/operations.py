"""What each MCP tool and resource does: one use case on a store, as a CLI command does.

Plain functions of a `Store` and a `Caller`, returning JSON-ready values, so that the two
transports and the tests share them and nothing here knows the SDK. Reports on the
caller's task (done, fail, defer, a question, a permission) go through the same use cases
as `corral done ID --token T`, under the caller's claim token: the store's fence refuses a
wrong or stale one with the CLI's own message.
"""

from __future__ import annotations

import json
from typing import Any

from corral.foundation.documents import check_text
from corral.foundation.errors import InvalidInput
from corral.foundation.printable import one_line
from corral.foundation.settings import Settings
from corral.mcp.caller import Caller
from corral.model import waiting
from corral.model.messages import Message
from corral.model.states import TaskStatus
from corral.model.subtasks import MAX_CHILDREN
from corral.model.tasks import NewTask, TaskFilter
from corral.store import Store
from corral.usecases import claims, messages, tasks

# How much of a tool call's input a permission's wait reason quotes (the reason is one
# line on `corral status` and the dashboard; the call itself is the agent's to keep).
PERMISSION_INPUT_CHARS = 400
MAX_LIST = 1000
OUTCOMES = ("done", "fail", "defer")


def list_tasks(
    store: Store, *, status: list[str], queue: str | None, parent: str | None, limit: int
) -> list[dict[str, Any]]:
    """Tasks by status, queue and parent, in the order they were added (`corral list`)."""
    if not 1 <= limit <= MAX_LIST:
        raise InvalidInput("limit", f"a whole number from 1 to {MAX_LIST}", limit)
    known = [str(s) for s in TaskStatus]
    for name in status:
        if name not in known:
            raise InvalidInput("status", f"one of {', '.join(known)}", name)
    flt = TaskFilter(
        statuses=tuple(TaskStatus(s) for s in status), queue=queue, parent_id=parent, limit=limit
    )
    return [t.to_dict() for t in store.tasks.list_tasks(flt)]


def show_task(store: Store, task_id: str) -> dict[str, Any]:
    """One task in full, with its children (`corral show`)."""
    task = store.tasks.get_task(task_id)
    children = store.tasks.list_tasks(TaskFilter(parent_id=task.id, limit=MAX_CHILDREN))
    shown = [{"id": c.id, "title": c.title, "status": str(c.status)} for c in children]
    return {**task.to_dict(), "children": shown}


def add_task(store: Store, spec: NewTask, settings: Settings) -> dict[str, Any]:
    """Enqueue a task (`corral add`)."""
    return tasks.enqueue(store, spec, settings=settings).to_dict()


def add_subtask(
    store: Store, caller: Caller, spec: NewTask, settings: Settings, *, token: int | None
) -> dict[str, Any]:
    """Enqueue a child of the caller's own task, in the same transaction as the check that
    the claim `token` names still holds it (refused as `corral done` would refuse that
    token). A running parent takes only children that wait for it (`parent_runs_first`,
    model/subtasks.py): the spec says so."""
    held = caller.claim_token(token)
    if held is None:
        raise InvalidInput("token", "the claim's token (CORRAL_CLAIM_TOKEN) of the parent task")
    return tasks.enqueue(store, spec, settings=settings, parent_token=held).to_dict()


def finish(
    store: Store,
    caller: Caller,
    settings: Settings,
    *,
    outcome: str,
    task_id: str | None,
    token: int | None,
    result: Any,
    error: str | None,
    delay_s: float | None,
) -> dict[str, Any]:
    """Finish the caller's task under its claim token: done (`corral done`), fail (`corral
    fail`, the retry policy decides) or defer (`corral defer`, back after `delay_s`)."""
    task = caller.task(task_id)
    held = caller.claim_token(token)
    if outcome == "done":
        return claims.complete(store, task, token=held, result=result).to_dict()
    if outcome == "fail":
        if not error or not error.strip():
            raise InvalidInput("error", "why it failed, for outcome fail")
        return claims.fail(store, task, error=error, token=held, settings=settings).to_dict()
    if outcome == "defer":
        if delay_s is None:
            raise InvalidInput("delay_s", "seconds until it runs again, for outcome defer")
        return claims.defer(store, task, until=delay_s, token=held, reason=error).to_dict()
    raise InvalidInput("outcome", f"one of {', '.join(OUTCOMES)}", outcome)


def report_progress(store: Store, caller: Caller, note: str, run_id: str | None) -> dict[str, Any]:
    """Keep `note` on the caller's run: its latest progress, shown live by `corral run show`
    and the dashboard, and a sign of life that clears a stall flag."""
    if not note.strip():
        raise InvalidInput("note", "text that is not empty")
    check_text("note", note)
    run = caller.run(run_id)
    store.runs.record_progress(run, note)
    return {"run_id": run, "progress": note}


def question_reason(question: str) -> str:
    """The wait reason of a question (as the outbox's `ask` records it)."""
    if not question.strip():
        raise InvalidInput("question", "text that is not empty")
    return waiting.reason(waiting.WaitKind.QUESTION, question.strip())


def begin_wait(
    store: Store, caller: Caller, reason: str, *, task_id: str | None, token: int | None
) -> str:
    """Make the caller's task wait for a person with `reason`, under its claim token (as
    `corral`'s outbox `ask`: the claim ends, the attempt is given back); the task's id."""
    task = caller.task(task_id)
    claims.wait(store, task, reason=reason, token=caller.claim_token(token))
    return task


def permission_reason(tool_name: str, tool_input: dict[str, Any]) -> str:
    """The wait reason of a permission request: the tool, then its input, on one line."""
    if not tool_name.strip():
        raise InvalidInput("tool_name", "the name of the tool the agent wants to call")
    shown = json.dumps(tool_input, sort_keys=True, ensure_ascii=False)
    detail = one_line(f"{tool_name.strip()} {shown}", PERMISSION_INPUT_CHARS)
    return waiting.reason(waiting.WaitKind.PERMISSION, detail)


def decided_before(store: Store, task_id: str, reason: str) -> str | None:
    """A person's answer to this very permission of this task, given when it last waited
    for it (a resumed session asks again for the call it was stopped at); else None."""
    task = store.tasks.get_task(task_id)
    if task.status is TaskStatus.WAITING or task.answered_reason != reason:
        return None
    return task.answer or waiting.DENY


def send_message(store: Store, *, to: str, type: str, body: Any, sender: str) -> dict[str, Any]:
    """Append a message to `to`'s inbox (`corral msg send`); never an order (drain, cancel)
    that acts on other workers and tasks."""
    from corral.model.outbox import ORDERS  # noqa: PLC0415 - the one list of orders

    if type in ORDERS:
        raise InvalidInput("type", f"a message type other than {' and '.join(ORDERS)}", type)
    return messages.send(store, to=to, type=type, body=body, sender=sender).to_dict()


def read_messages(
    store: Store, *, inbox: str, after_id: int, unacked: bool
) -> list[dict[str, Any]]:
    """An inbox's messages after `after_id`, oldest first (`corral msg inbox`)."""
    found: list[Message] = messages.inbox(store, inbox, unacked=unacked, after_id=after_id)
    return [m.to_dict() for m in found]


def transcript(store: Store, run_id: str, max_bytes: int) -> str:
    """A run's transcript, its last `max_bytes` if longer (`corral logs`), as text."""
    from corral.server.run_output import output_path  # noqa: PLC0415 - resources only

    path = output_path(store, run_id, "transcript")
    with open(path, "rb") as handle:
        handle.seek(0, 2)
        size = handle.tell()
        handle.seek(max(0, size - max_bytes))
        return handle.read().decode("utf-8", errors="replace")
